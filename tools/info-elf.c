// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * ntsync-info: was this Wine built with its ntsync backend?  Decided from
 * the binary itself (--check-wine PATH, and link 2 of --pid).
 *
 * Wine (server/inproc_sync.c, dlls/ntdll/unix/sync.c; 11.10 as read in
 * wine-11.10-tkg) compiles its backend only under
 * "#ifdef NTSYNC_IOC_EVENT_READ", after including <linux/ntsync.h> when
 * configure found one.  The backend passes the driver's request numbers to
 * ioctl(): wineserver NTSYNC_IOC_CREATE_SEM, _CREATE_MUTEX, _CREATE_EVENT,
 * _EVENT_SET, _EVENT_RESET and _MUTEX_KILL; ntdll.so _SEM_RELEASE,
 * _SEM_READ, _EVENT_SET, _EVENT_RESET, _EVENT_PULSE, _EVENT_READ,
 * _MUTEX_UNLOCK, _MUTEX_READ, _WAIT_ANY and _WAIT_ALL.  The "#else" stubs
 * return -1, NULL or STATUS_NOT_IMPLEMENTED and name none of them: in a
 * stub build those macros are not even defined (no header, or Debian 13's
 * 6.10 preview without NTSYNC_IOC_EVENT_READ), so no request number can
 * reach the code.  A request number is 32 bits with the direction, the
 * argument's size, the type 'N' and the number (_IOC()), so several of
 * them in one binary's code by chance are not to be expected (about
 * 14 * 4 MB / 2^32 = 0.01 for one of them in a large binary's code, if its
 * bytes were random; two is 1e-4).  But not every request number is
 * there in the backend either: an optimizing compiler derives some from
 * others (clang -O2 for arm64 keeps 3 of wineserver's 6, building the rest
 * with an ADD; GCC and clang for x86 keep all of them, see the test).  The
 * evidence is therefore: at least EVIDENCE_MIN (2) distinct request numbers
 * in the executable sections (instruction immediates; on arm64 also a
 * literal pool there), never in data: a program that merely lists them,
 * as this one does, is not taken for a backend.  On x86 an immediate
 * is the little-endian 32-bit value itself ("mov $0x40084e80,%esi"); on
 * arm64 GCC builds a 32-bit constant with MOVZ (low half) and MOVK (high
 * half, LSL 16) into one register, which is looked for as that pair.
 *
 * What is NOT evidence: the string "/dev/ntsync".  wine-tkg's real
 * wineserver has it (and prints "NTSync up and running!"), but other
 * builds and forks may name the path without a working backend (the test
 * shows a stub that has the string and is still told apart); it is shown,
 * never decided on.  Request numbers are computed from the project's
 * <linux/ntsync.h> (the ABI of Linux 6.14 and of this driver), never
 * written out by hand.
 */

#include "info.h"

#include <dirent.h>
#include <elf.h>
#include <ftw.h>
#include <sys/ioctl.h>
#include <sys/mman.h>

#include <linux/ntsync.h>

#define EVIDENCE_MIN 2

const struct ntsync_request ntsync_requests[NTSYNC_NREQUESTS] = {
	{ "CREATE_SEM", NTSYNC_IOC_CREATE_SEM },
	{ "SEM_RELEASE", NTSYNC_IOC_SEM_RELEASE },
	{ "WAIT_ANY", NTSYNC_IOC_WAIT_ANY },
	{ "WAIT_ALL", NTSYNC_IOC_WAIT_ALL },
	{ "CREATE_MUTEX", NTSYNC_IOC_CREATE_MUTEX },
	{ "MUTEX_UNLOCK", NTSYNC_IOC_MUTEX_UNLOCK },
	{ "MUTEX_KILL", NTSYNC_IOC_MUTEX_KILL },
	{ "CREATE_EVENT", NTSYNC_IOC_CREATE_EVENT },
	{ "EVENT_SET", NTSYNC_IOC_EVENT_SET },
	{ "EVENT_RESET", NTSYNC_IOC_EVENT_RESET },
	{ "EVENT_PULSE", NTSYNC_IOC_EVENT_PULSE },
	{ "SEM_READ", NTSYNC_IOC_SEM_READ },
	{ "MUTEX_READ", NTSYNC_IOC_MUTEX_READ },
	{ "EVENT_READ", NTSYNC_IOC_EVENT_READ },
};

/*
 * Strings that make a file Wine's: wineserver's usage text and its
 * start-up message (server/main.c), ntdll.so's own variables
 * (dlls/ntdll/unix/loader.c, virtual.c).  Stub and backend builds have
 * them alike.  "get_inproc_sync_fd" is the request the backend adds
 * (server/request_trace.h); a wineserver without it predates the backend.
 */
/* Each without its first character, which is checked apart: this
 * program's own copy of them is then no marker. */
static const char *const wine_markers[] = {
	"m|ake server persistent", "w|ineserver: starting (pid=",
	"W|INELOADERNOEXEC", "W|INEPRELOADRESERVE",
};
#define BACKEND_REQUEST "get_inproc_sync_fd"

static bool has_bytes(const unsigned char *p, size_t n, const void *s,
		      size_t len)
{
	return len <= n && memmem(p, n, s, len) != NULL;
}

static bool has_string(const unsigned char *p, size_t n, const char *s)
{
	return has_bytes(p, n, s, strlen(s));
}

/* "X|rest": X followed by rest (see wine_markers) */
static bool has_marker(const unsigned char *p, size_t n, const char *m)
{
	size_t len = strlen(m + 2);
	const unsigned char *q = p, *end = p + n;

	while ((q = memmem(q, (size_t)(end - q), m + 2, len))) {
		if (q > p && q[-1] == (unsigned char)m[0])
			return true;
		q++;
	}
	return false;
}

/* Little-endian 32-bit values anywhere in [p, p+n). */
static void scan_le32(const unsigned char *p, size_t n, bool *found)
{
	for (int i = 0; i < NTSYNC_NREQUESTS; i++) {
		uint32_t v = ntsync_requests[i].value;
		unsigned char b[4] = { v & 0xff, (v >> 8) & 0xff,
				       (v >> 16) & 0xff, v >> 24 };

		if (has_bytes(p, n, b, 4))
			found[i] = true;
	}
}

static uint32_t le32(const unsigned char *p)
{
	return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24;
}

/*
 * arm64: MOVZ Rd, #lo followed within 8 instructions by MOVK Rd, #hi,
 * LSL #16 (32- or 64-bit forms; sf bit 31 masked off).
 */
static void scan_arm64(const unsigned char *p, size_t n, bool *found)
{
	for (size_t i = 0; i + 4 <= n; i += 4) {
		uint32_t w = le32(p + i);

		if ((w & 0x7fe00000) != 0x52800000)	/* MOVZ, hw 0 */
			continue;
		uint32_t lo = (w >> 5) & 0xffff, rd = w & 0x1f;

		for (size_t j = i + 4; j < n && j <= i + 32; j += 4) {
			uint32_t k = le32(p + j);

			if ((k & 0x7fe0001f) != (0x72a00000 | rd))
				continue;	/* not MOVK Rd, #x, LSL 16 */
			uint32_t v = lo | ((k >> 5) & 0xffff) << 16;

			for (int r = 0; r < NTSYNC_NREQUESTS; r++)
				if (ntsync_requests[r].value == v)
					found[r] = true;
			break;
		}
	}
}

struct elf_view {
	const unsigned char *p;
	size_t n;
	bool is64;
};

static bool in_file(const struct elf_view *e, uint64_t off, uint64_t len)
{
	return off <= e->n && len <= e->n - off;
}

/* The executable sections (.text, ...); the whole file if there are no
 * section headers. */
static void scan_sections(const struct elf_view *e, uint16_t machine,
			  bool *found)
{
	uint64_t shoff;
	unsigned int shnum, shentsize;
	unsigned int scanned = 0;

	if (e->is64) {
		const Elf64_Ehdr *h = (const void *)e->p;

		shoff = h->e_shoff;
		shnum = h->e_shnum;
		shentsize = h->e_shentsize;
	} else {
		const Elf32_Ehdr *h = (const void *)e->p;

		shoff = h->e_shoff;
		shnum = h->e_shnum;
		shentsize = h->e_shentsize;
	}
	/* A header smaller than the record it must hold is no section table
	 * (each one is copied whole below): scan the whole file instead. */
	if (shentsize < (e->is64 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr)))
		shoff = 0;
	for (unsigned int i = 0; shoff && i < shnum; i++) {
		uint64_t off, size, flags;
		uint32_t type;

		if (!in_file(e, shoff + (uint64_t)i * shentsize, shentsize))
			break;
		if (e->is64) {
			Elf64_Shdr s;

			memcpy(&s, e->p + shoff + (uint64_t)i * shentsize,
			       sizeof(s));
			off = s.sh_offset, size = s.sh_size;
			flags = s.sh_flags, type = s.sh_type;
		} else {
			Elf32_Shdr s;

			memcpy(&s, e->p + shoff + (uint64_t)i * shentsize,
			       sizeof(s));
			off = s.sh_offset, size = s.sh_size;
			flags = s.sh_flags, type = s.sh_type;
		}
		if (type != SHT_PROGBITS || !(flags & SHF_EXECINSTR) ||
		    !in_file(e, off, size))
			continue;
		scanned++;
		if (machine == EM_AARCH64)
			scan_arm64(e->p + off, size, found);
		scan_le32(e->p + off, size, found);
	}
	if (!scanned) {
		if (machine == EM_AARCH64)
			scan_arm64(e->p, e->n & ~(size_t)3, found);
		scan_le32(e->p, e->n, found);
	}
}

static const char *machine_name(uint16_t m)
{
	switch (m) {
	case EM_X86_64: return "x86-64";
	case EM_386: return "i386";
	case EM_AARCH64: return "arm64";
	case EM_ARM: return "arm";
	default: return "other";
	}
}

static const char *role_of(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (!strncmp(base, "wineserver", 10))
		return "wineserver";
	if (!strcmp(base, "ntdll.so"))
		return "ntdll.so";
	return "file";
}

int elf_check(const char *path, struct wine_binary *out)
{
	struct stat st;
	bool found[NTSYNC_NREQUESTS] = { false };
	struct elf_view e;
	void *map;
	int fd;

	memset(out, 0, sizeof(*out));
	fmt(out->path, sizeof(out->path), "%s", path);
	out->role = role_of(path);
	out->machine = "";
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) != 0) {
		out->err = errno;
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (!S_ISREG(st.st_mode) || st.st_size < (off_t)sizeof(Elf32_Ehdr)) {
		close(fd);
		return 0;	/* not ELF */
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (map == MAP_FAILED) {
		out->err = errno;
		return -1;
	}
	e.p = map;
	e.n = (size_t)st.st_size;
	if (memcmp(e.p, ELFMAG, SELFMAG) || e.p[EI_DATA] != ELFDATA2LSB ||
	    (e.p[EI_CLASS] != ELFCLASS64 && e.p[EI_CLASS] != ELFCLASS32) ||
	    (e.p[EI_CLASS] == ELFCLASS64 && e.n < sizeof(Elf64_Ehdr))) {
		munmap(map, e.n);
		return 0;
	}
	out->elf = true;
	e.is64 = e.p[EI_CLASS] == ELFCLASS64;
	{
		uint16_t machine;

		memcpy(&machine, e.p + offsetof(Elf32_Ehdr, e_machine), 2);
		out->machine = machine_name(machine);
		scan_sections(&e, machine, found);
	}
	for (size_t i = 0; i < sizeof(wine_markers) / sizeof(*wine_markers); i++)
		if (has_marker(e.p, e.n, wine_markers[i]))
			out->wine = true;
	out->backend_request = has_string(e.p, e.n, BACKEND_REQUEST);
	out->dev_string = has_string(e.p, e.n, "/dev/ntsync");
	for (int i = 0; i < NTSYNC_NREQUESTS; i++) {
		if (!found[i])
			continue;
		out->found_mask |= 1u << i;
		out->nfound++;
	}
	out->backend = out->nfound >= EVIDENCE_MIN;
	munmap(map, e.n);
	return 0;
}

/* "CREATE_SEM, CREATE_MUTEX, ..." of the request numbers found. */
void requests_text(unsigned int mask, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (int i = 0; i < NTSYNC_NREQUESTS; i++) {
		if (!(mask & (1u << i)))
			continue;
		used += (size_t)snprintf(buf + used, used < len ? len - used : 0,
					 "%s%s", used ? ", " : "",
					 ntsync_requests[i].name);
		if (used >= len)
			break;
	}
}

/* One line on what was found in a binary (the evidence of link 2). */
void binary_text(const struct wine_binary *b, char *buf, size_t len)
{
	char req[TEXT * 2];

	if (b->err) {
		fmt(buf, len, "%s: cannot read: %s", b->path, strerror(b->err));
		return;
	}
	if (!b->elf) {
		fmt(buf, len, "%s: not an ELF file", b->path);
		return;
	}
	requests_text(b->found_mask, req, sizeof(req));
	if (!b->wine)
		fmt(buf, len, "%s (%s): not Wine's (none of Wine's own "
		    "strings); %u ntsync request numbers in its code",
		    b->path, b->machine, b->nfound);
	else if (b->backend && b->nfound == NTSYNC_NREQUESTS)
		fmt(buf, len, "%s (%s): backend compiled in: all %u ntsync "
		    "request numbers in its code", b->path, b->machine,
		    b->nfound);
	else if (b->backend)
		fmt(buf, len, "%s (%s): backend compiled in: %u ntsync request "
		    "numbers in its code (%s)", b->path, b->machine, b->nfound,
		    req);
	else
		fmt(buf, len, "%s (%s): stubs only: %u ntsync request numbers "
		    "in its code%s%s%s (the backend has %d or more); "
		    "\"/dev/ntsync\" string %s (not evidence either way)%s",
		    b->path, b->machine, b->nfound, b->nfound ? " (" : "", req,
		    b->nfound ? ")" : "", EVIDENCE_MIN,
		    b->dev_string ? "present" : "absent",
		    !strcmp(b->role, "wineserver") && !b->backend_request ?
		    "; no get_inproc_sync_fd request: a Wine without the "
		    "ntsync backend in its source (upstream has it from "
		    "10.16 on)" : "");
}

/* ---- --check-wine PATH ---- */

#define MAX_BINARIES 32
static struct wine_binary found_bins[MAX_BINARIES];
static unsigned int nfound_bins;

static int collect(const char *fpath, const struct stat *sb, int type,
		   struct FTW *ftw)
{
	const char *base = fpath + ftw->base;

	if (type == FTW_D && ftw->level > 0 &&
	    (!strcmp(base, ".git") || ftw->level > 8))
		return FTW_SKIP_SUBTREE;
	if (type != FTW_F || !S_ISREG(sb->st_mode))
		return FTW_CONTINUE;
	if (strcmp(base, "wineserver") && strcmp(base, "ntdll.so"))
		return FTW_CONTINUE;
	if (nfound_bins < MAX_BINARIES)
		elf_check(fpath, &found_bins[nfound_bins++]);
	return FTW_CONTINUE;
}

static void print_binary_json(const struct wine_binary *b)
{
	char req[TEXT * 2], text[TEXT * 4];

	requests_text(b->found_mask, req, sizeof(req));
	binary_text(b, text, sizeof(text));
	printf("{\"path\": ");
	json_str(b->path);
	printf(", \"role\": ");
	json_str(b->role);
	printf(", \"elf\": %s, \"machine\": ", b->elf ? "true" : "false");
	json_str_or_null(b->machine);
	printf(", \"wine\": %s, \"backend\": %s, \"request_numbers\": %u, "
	       "\"requests\": ", b->wine ? "true" : "false",
	       b->elf && b->wine ? (b->backend ? "true" : "false") : "null",
	       b->nfound);
	json_str(req);
	printf(", \"dev_ntsync_string\": %s, \"error\": ",
	       b->dev_string ? "true" : "false");
	json_str_or_null(b->err ? strerror(b->err) : NULL);
	printf(", \"description\": ");
	json_str(text);
	printf("}");
}

int check_wine(const char *path, bool json)
{
	unsigned int wine = 0, backend = 0, stub = 0;
	char verdict[TEXT * 2];
	struct stat st;
	int rc;

	nfound_bins = 0;
	if (stat(path, &st) != 0) {
		fmt(verdict, sizeof(verdict), "cannot read %s: %s", path,
		    strerror(errno));
		rc = EXIT_USAGE;
		goto out;
	}
	if (S_ISDIR(st.st_mode))
		nftw(path, collect, 16, FTW_PHYS | FTW_ACTIONRETVAL);
	else
		elf_check(path, &found_bins[nfound_bins++]);

	for (unsigned int i = 0; i < nfound_bins; i++) {
		const struct wine_binary *b = &found_bins[i];

		if (!b->elf || !b->wine)
			continue;
		wine++;
		if (b->backend)
			backend++;
		else
			stub++;
	}
	if (!wine) {
		if (S_ISDIR(st.st_mode) && !nfound_bins)
			fmt(verdict, sizeof(verdict), "NOT WINE: no wineserver "
			    "or ntdll.so under %s (give an install prefix, a "
			    "build tree or one of those files)", path);
		else if (nfound_bins == 1 && found_bins[0].err)
			fmt(verdict, sizeof(verdict), "cannot read %s: %s",
			    path, strerror(found_bins[0].err));
		else
			fmt(verdict, sizeof(verdict), "NOT WINE: %s is no "
			    "wineserver or ntdll.so of Wine (none of Wine's "
			    "own strings in it)", path);
		rc = EXIT_USAGE;
	} else if (stub) {
		fmt(verdict, sizeof(verdict), "STUB: the ntsync backend is not "
		    "compiled into %u of %u Wine binar%s under %s; rebuild "
		    "Wine with the complete header: ./configure CPPFLAGS=\""
		    "$(pkg-config --cflags ntsync-uapi)\" (ntsync-uapi-dev)",
		    stub, wine, wine == 1 ? "y" : "ies", path);
		rc = EXIT_NOT_WORKING;
	} else {
		fmt(verdict, sizeof(verdict), "BACKEND: the ntsync backend is "
		    "compiled into %u Wine binar%s under %s", backend,
		    backend == 1 ? "y" : "ies", path);
		rc = EXIT_WORKING;
	}
out:
	if (json) {
		printf("{\"path\": ");
		json_str(path);
		printf(", \"files\": [");
		for (unsigned int i = 0; i < nfound_bins; i++) {
			printf("%s\n  ", i ? "," : "");
			print_binary_json(&found_bins[i]);
		}
		printf("%s], \"backend\": %s, \"verdict\": ",
		       nfound_bins ? "\n" : "",
		       rc == EXIT_WORKING ? "true" :
		       rc == EXIT_NOT_WORKING ? "false" : "null");
		json_str(verdict);
		printf(", \"exit\": %d}\n", rc);
		return rc;
	}
	for (unsigned int i = 0; i < nfound_bins; i++) {
		char text[TEXT * 4];

		binary_text(&found_bins[i], text, sizeof(text));
		printf("%s\n", text);
	}
	printf("verdict: %s\n", verdict);
	return rc;
}
