// SPDX-License-Identifier: LGPL-2.1-or-later
/* ntsync-info: Secure Boot, lockdown and DKMS's signing key. */

#include "info.h"

/* ---- Secure Boot and DKMS's signing key ---- */

/*
 * With Secure Boot on, Debian's kernels lock themselves down and load only
 * modules signed by a key they trust: the distribution's, or one enrolled
 * in shim's MOK list (MokListRT, which the kernel loads into its keyrings)
 * or in the firmware's db.  DKMS signs what it builds with
 * /var/lib/dkms/mok.key; its certificate, mok.pub (DER), is trusted only
 * after "mokutil --import" and a reboot through MokManager.  Everything
 * here is read from files any user may read where it can; what cannot be
 * read is reported as unknown, never guessed.
 */

/* Larger than any MOK list, db or certificate. */
#define BLOB_MAX (1 << 20)

struct blob {
	unsigned char *data;
	size_t len;
};

/* Read a whole file (under root): 0, or -errno (-EFBIG past BLOB_MAX). */
static int read_blob(const char *path, struct blob *b)
{
	char full[TEXT * 2];
	size_t cap = 0;
	ssize_t n;
	int fd, err = 0;

	b->data = NULL;
	b->len = 0;
	rooted(full, sizeof(full), path);
	fd = open(full, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	for (;;) {
		if (b->len == cap) {
			unsigned char *p;

			if (cap >= BLOB_MAX) {
				err = -EFBIG;
				break;
			}
			cap = cap ? cap * 2 : 4096;
			p = realloc(b->data, cap);
			if (!p) {
				err = -ENOMEM;
				break;
			}
			b->data = p;
		}
		n = read(fd, b->data + b->len, cap - b->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = -errno;
			break;
		}
		if (n == 0)
			break;
		b->len += (size_t)n;
	}
	close(fd);
	if (err) {
		free(b->data);
		b->data = NULL;
		b->len = 0;
	}
	return err;
}

/*
 * An efivarfs file: 4 bytes of attributes, then the value.  0, or -errno
 * (-EINVAL for a file too short to hold the attributes).
 */
static int read_efivar(const char *name, struct blob *b)
{
	char path[TEXT];
	int err;

	fmt(path, sizeof(path), EFIVARS "%s", name);
	err = read_blob(path, b);
	if (err)
		return err;
	if (b->len < 4) {
		free(b->data);
		b->data = NULL;
		return -EINVAL;
	}
	memmove(b->data, b->data + 4, b->len - 4);
	b->len -= 4;
	return 0;
}

/* A one-byte EFI variable's value (0..255), or -errno. */
static int efivar_byte(const char *name)
{
	struct blob b;
	int ret = read_efivar(name, &b);

	if (ret)
		return ret;
	ret = b.len == 1 ? b.data[0] : -EINVAL;
	free(b.data);
	return ret;
}

/* Whether the efivarfs directory shows any variable (is it mounted?). */
static bool efivars_listed(void)
{
	char pattern[TEXT * 2];
	glob_t g;
	bool any;

	rooted(pattern, sizeof(pattern), EFIVARS "*-*");
	any = glob(pattern, 0, NULL, &g) == 0 && g.gl_pathc > 0;
	globfree(&g);
	return any;
}

static void probe_sb_state(void)
{
	int sb, setup, moksb;

	info.sb_enabled = TRI_UNKNOWN;
	if (!path_exists(EFI_DIR)) {
		if (path_exists("/sys/firmware")) {
			info.sb_enabled = TRI_NO;
			fmt(info.sb_text, sizeof(info.sb_text),
			    "off (not booted through EFI firmware)");
		} else {
			fmt(info.sb_text, sizeof(info.sb_text),
			    "unknown (no /sys/firmware to look at)");
		}
		return;
	}
	sb = efivar_byte("SecureBoot" GUID_GLOBAL);
	if (sb == -ENOENT && efivars_listed()) {
		info.sb_enabled = TRI_NO;
		fmt(info.sb_text, sizeof(info.sb_text),
		    "off (the firmware has no SecureBoot variable)");
		return;
	}
	if (sb < 0 || sb > 1) {
		fmt(info.sb_text, sizeof(info.sb_text), "unknown (%s%s: %s)",
		    EFIVARS "SecureBoot", GUID_GLOBAL,
		    sb == -ENOENT ? "missing; is efivarfs mounted?" :
		    sb == -EINVAL ? "not one byte" :
		    sb >= 0 ? "an unexpected value" : strerror(-sb));
		return;
	}
	if (sb == 0) {
		info.sb_enabled = TRI_NO;
		fmt(info.sb_text, sizeof(info.sb_text), "off");
		return;
	}
	/* As the kernel's EFI stub decides: setup mode, or shim told not
	 * to validate (mokutil --disable-validation), means off. */
	setup = efivar_byte("SetupMode" GUID_GLOBAL);
	if (setup == 1) {
		info.sb_enabled = TRI_NO;
		fmt(info.sb_text, sizeof(info.sb_text),
		    "off (the firmware is in setup mode)");
		return;
	}
	moksb = efivar_byte("MokSBStateRT" GUID_SHIM);
	if (moksb == 1) {
		info.sb_enabled = TRI_NO;
		fmt(info.sb_text, sizeof(info.sb_text),
		    "off (validation is disabled in shim)");
		return;
	}
	info.sb_enabled = TRI_YES;
	fmt(info.sb_text, sizeof(info.sb_text), "on");
}

static void probe_lockdown(void)
{
	char line[TEXT], *open_br, *close_br;

	info.lockdown[0] = '\0';
	if (!rooted_read_line(LOCKDOWN, line, sizeof(line)))
		return;
	open_br = strchr(line, '[');
	close_br = open_br ? strchr(open_br, ']') : NULL;
	if (!close_br || close_br - open_br - 1 >= (int)sizeof(info.lockdown))
		return;
	*close_br = '\0';
	fmt(info.lockdown, sizeof(info.lockdown), "%s", open_br + 1);
}

/* Does the blob hold the key's bytes? */
static bool blob_has(const struct blob *b, const struct blob *key)
{
	return b->len >= key->len &&
	       memmem(b->data, b->len, key->data, key->len) != NULL;
}

/*
 * Search one variable for the key: TRI_YES, TRI_NO (read, not there), or
 * -errno (-ENOENT: no such variable).  efivar selects the efivarfs format.
 */
static int var_has_key(const char *path_or_name, bool efivar,
		       const struct blob *key)
{
	struct blob b;
	int ret;

	ret = efivar ? read_efivar(path_or_name, &b) :
		       read_blob(path_or_name, &b);
	if (ret)
		return ret;
	ret = blob_has(&b, key) ? TRI_YES : TRI_NO;
	free(b.data);
	return ret;
}

/*
 * The MOK list as the kernel sees it: /sys/firmware/efi/mok-variables/
 * MokListRT (root only), else shim's runtime copy in efivarfs, which shim
 * splits into MokListRT, MokListRT1, MokListRT2, ... when it is large.
 */
static int mok_list_has_key(const struct blob *key)
{
	char name[TEXT];
	int kernel, ret, i;

	kernel = var_has_key(MOKVARS "MokListRT", false, key);
	if (kernel == TRI_YES || kernel == TRI_NO)
		return kernel;
	for (i = 0; i < 64; i++) {
		if (i)
			fmt(name, sizeof(name), "MokListRT%d" GUID_SHIM, i);
		else
			fmt(name, sizeof(name), "MokListRT" GUID_SHIM);
		ret = var_has_key(name, true, key);
		if (ret == TRI_YES)
			return TRI_YES;
		if (ret == -ENOENT && i)
			return TRI_NO;
		if (ret == -ENOENT)	/* the kernel's copy may still exist */
			return kernel;
		if (ret != TRI_NO)
			return ret;
	}
	return TRI_NO;
}

static void probe_dkms_key(void)
{
	struct blob key, req;
	int mok, db, ret;

	info.key_enrolled = TRI_UNKNOWN;
	info.key_pending = TRI_UNKNOWN;
	ret = read_blob(DKMS_KEY, &key);
	info.dkms_key = ret != -ENOENT && ret != -ENOTDIR;
	if (!info.dkms_key) {
		fmt(info.key_text, sizeof(info.key_text), "none (no %s)",
		    DKMS_KEY);
		return;
	}
	if (ret) {
		fmt(info.key_text, sizeof(info.key_text),
		    "%s: not readable (%s)", DKMS_KEY, strerror(-ret));
		return;
	}
	/* A DER certificate is one SEQUENCE: 0x30 and a long length. */
	if (key.len < 16 || key.data[0] != 0x30) {
		fmt(info.key_text, sizeof(info.key_text),
		    "%s: not a DER certificate", DKMS_KEY);
		free(key.data);
		return;
	}

	if (info.sb_enabled == TRI_NO && !path_exists(EFI_DIR)) {
		free(key.data);
		fmt(info.key_text, sizeof(info.key_text),
		    "%s (no EFI firmware: nothing to enroll it in)", DKMS_KEY);
		return;
	}

	mok = mok_list_has_key(&key);
	db = var_has_key("db" GUID_SECURITY, true, &key);
	if (mok == TRI_YES || db == TRI_YES)
		info.key_enrolled = TRI_YES;
	else if (mok == TRI_NO)
		info.key_enrolled = TRI_NO;
	else if (mok == -ENOENT && info.sb_enabled != TRI_UNKNOWN &&
		 efivars_listed()) {
		/* Variables are readable, and shim left no MOK list: the
		 * machine boots without shim, so there is no MokManager. */
		info.key_enrolled = TRI_NO;
		info.no_mok_list = true;
	}

	/* mokutil --import writes the request to MokNew (mode 0600). */
	ret = read_efivar("MokNew" GUID_SHIM, &req);
	info.mok_request = ret != -ENOENT;
	if (ret == -ENOENT) {
		info.key_pending = TRI_NO;
	} else if (!ret) {
		info.key_pending = blob_has(&req, &key) ? TRI_YES : TRI_NO;
		free(req.data);
	}
	if (info.key_enrolled == TRI_YES)
		info.key_pending = TRI_NO;
	free(key.data);

	if (info.key_enrolled == TRI_YES)
		fmt(info.key_text, sizeof(info.key_text), "%s enrolled (%s)",
		    DKMS_KEY, mok == TRI_YES ? "in the MOK list" :
		    "in the firmware's db");
	else if (info.key_pending == TRI_YES)
		fmt(info.key_text, sizeof(info.key_text),
		    "%s not enrolled yet: its enrollment waits for the next "
		    "reboot (MokManager)", DKMS_KEY);
	else if (info.key_enrolled == TRI_NO)
		fmt(info.key_text, sizeof(info.key_text),
		    "%s not enrolled (%s)%s", DKMS_KEY,
		    info.no_mok_list ? "no MOK list: not booted through shim" :
		    "not in the MOK list",
		    info.key_pending == TRI_UNKNOWN ?
		    "; an enrollment request waits for the next reboot "
		    "(MokNew, readable by root only)" : "");
	else
		fmt(info.key_text, sizeof(info.key_text),
		    "%s: unknown whether enrolled (the MOK list is not "
		    "readable%s; run as root)", DKMS_KEY,
		    mok == -ENOENT ? ": no efivarfs" : " by this user");
}

void probe_secure_boot(void)
{
	probe_sb_state();
	probe_lockdown();
	probe_dkms_key();
}

/*
 * The module was built but is not loaded, and the kernel will refuse it:
 * Secure Boot is on, the kernel is not known to be unlocked, and DKMS's
 * key is known not to be enrolled.
 */
bool secure_boot_refuses(void)
{
	return info.sb_enabled == TRI_YES &&
	       strcmp(info.lockdown, "none") != 0 &&
	       info.key_enrolled != TRI_YES &&
	       (info.key_enrolled == TRI_NO || info.key_pending == TRI_YES);
}

/* What the user sees in MokManager after the reboot. */
#define MOK_STEPS "reboot; when the blue MokManager screen says \"Press " \
	"any key to perform MOK management\", press a key within 10 " \
	"seconds, then choose \"Enroll MOK\" -> \"Continue\" -> \"Yes\", " \
	"type the password, and choose \"Reboot\"; after that reboot ntsync " \
	"loads by itself"

void explain_secure_boot(void)
{
	if (info.key_pending == TRI_YES) {
		info.cause = "secure-boot-key-pending";
		fmt(info.verdict, sizeof(info.verdict),
		    "NOT WORKING: Secure Boot refuses the ntsync module until "
		    "DKMS's signing key (%s) is enrolled: its enrollment waits "
		    "for the next reboot", DKMS_KEY);
		fmt(info.hint, sizeof(info.hint),
		    "'mokutil --import %s' was run: " MOK_STEPS
		    " (the password is the one chosen at the import)",
		    DKMS_KEY);
		return;
	}
	info.cause = "secure-boot-key-not-enrolled";
	fmt(info.verdict, sizeof(info.verdict),
	    "NOT WORKING: Secure Boot refuses the ntsync module: DKMS's "
	    "signing key (%s) is not enrolled", DKMS_KEY);
	if (info.no_mok_list)
		fmt(info.hint, sizeof(info.hint),
		    "this machine boots without shim (there is no MOK list), "
		    "so MokManager cannot enroll the key: add %s to the "
		    "firmware's Secure Boot db with its setup tool, or turn "
		    "Secure Boot off", DKMS_KEY);
	else
		fmt(info.hint, sizeof(info.hint),
		    "enroll DKMS's key once: run 'sudo mokutil --import %s' "
		    "(package mokutil) and choose a one-time password, then "
		    MOK_STEPS "%s", DKMS_KEY,
		    info.mok_request && info.key_pending != TRI_NO ?
		    " (an enrollment request already waits for the next "
		    "reboot; ntsync-info as root tells whether it holds "
		    "this key)" : "");
}
