/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * ntsync-info: what its parts share.  One file per concern:
 *   ntsync-info.c       the command line and the order of the probes
 *   info-sys.c          formatting, files under NTSYNC_INFO_SYSROOT
 *   info-driver.c       the device node and the driver behind it
 *   info-checks.c       the live check of every operation
 *   info-headers.c      the system's <linux/ntsync.h>, for Wine's build
 *   info-secureboot.c   Secure Boot, lockdown, DKMS's signing key
 *   info-verdict.c      the verdict, its cause and the hint
 *   info-text.c, info-json.c   the two reports
 *   info-elf.c          Wine's binaries: backend or stubs (--check-wine)
 *   info-wine.c         one Wine process's five links (--pid, --wine)
 *   info-wine-report.c  their reports, text and JSON
 * (ntsync-users.c: who has the device open.)  Every probe fills the one
 * struct info_state, info; the reports only read it.
 */
#ifndef NTSYNC_INFO_H
#define NTSYNC_INFO_H

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <ntsync.h>

#include "ntsync-users.h"
#include "tools-common.h"

#define EXIT_WORKING 0
#define EXIT_NOT_WORKING 1
#define EXIT_USAGE 2
#define EXIT_SECURE_BOOT 3
/* --pid and --wine (--check-wine uses 0, 1 and 2 only) */
#define EXIT_NO_PROCESS 4	/* no such process */
#define EXIT_NOT_WINE 5		/* a process that is not Wine */
#define EXIT_ZOMBIE 6		/* exited, not reaped: nothing to read */
#define EXIT_UNKNOWN 7		/* cannot tell: /proc not readable (root) */

/* Upper bound for the checks that wait for a wake-up: a broken driver makes
 * a check fail, never hang the tool. */
#define WAKE_BOUND_NS UINT64_C(5000000000)

#define TEXT 256

enum result { PASS, FAIL, SKIP };

struct check {
	const char *name;
	enum result result;
	char detail[TEXT];
};

#define MAX_CHECKS 32

struct info_state {
	/* environment */
	const char *root;	/* prefix for /sys, /proc, /lib/modules (tests) */
	struct utsname uts;

	/* device node */
	const char *path;
	bool exists;
	bool chardev;
	unsigned int major, minor;
	unsigned int mode;
	int stat_errno;
	bool openable;
	int open_err;
	bool misc_registered;	/* "ntsync" in /proc/misc */

	/* driver */
	bool module_loaded;	/* /sys/module/ntsync exists */
	char mod_version[64];
	char mod_srcversion[64];
	char mod_taint[32];
	char mod_initstate[32];
	bool out_of_tree;
	char dkms_file[TEXT];
	char intree_file[TEXT];
	/* the ntsync-dkms source installed (/usr/src/ntsync-VERSION), and
	 * what a loaded module of ours is next to it: "same", "older",
	 * "newer", "other", "removed" (no source left), or "" */
	char installed_version[64];
	const char *installed_state;
	char installed_text[TEXT * 2];
	const char *driver_kind;
	char driver_text[TEXT * 2];

	/* live checks */
	struct check checks[MAX_CHECKS];
	int nchecks, passed, failed, skipped;

	/* who uses it */
	struct ntsync_users users;

	/* the system's ABI header, for emulator builds */
	const char *sys_header;		/* "missing", "incomplete", "complete" */
	bool uapi_header;		/* ntsync-uapi-dev's copy is installed */
	char header_text[TEXT * 2];

	/* Secure Boot and the key DKMS signs the module with */
	int sb_enabled;			/* TRI_YES, TRI_NO, TRI_UNKNOWN */
	char sb_text[TEXT];
	char lockdown[32];		/* "" when unknown */
	bool dkms_key;			/* DKMS_KEY exists */
	int key_enrolled;		/* in the MOK list or db */
	int key_pending;		/* in MokNew, the import request */
	bool mok_request;		/* MokNew exists (for whatever key) */
	bool no_mok_list;		/* EFI without MokListRT: no shim */
	char key_text[TEXT];
	const char *cause;		/* NULL, or why it does not work */

	bool working;
	char verdict[TEXT * 2];
	char hint[TEXT * 4];
};
extern struct info_state info;

#define SYS_HEADER "/usr/include/linux/ntsync.h"
#define UAPI_HEADER "/usr/include/ntsync-uapi/linux/ntsync.h"
/* The reminder about a running wineserver. */
#define WINESERVER_NOTE "a running wineserver keeps the choice it made when " \
	"it started: after loading the module, restart Wine (wineserver -k)"


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
enum { TRI_UNKNOWN = -1, TRI_NO = 0, TRI_YES = 1 };

#define EFI_DIR "/sys/firmware/efi"
#define EFIVARS EFI_DIR "/efivars/"
/* Since Linux 5.10, the MOK variables shim passed to the kernel. */
#define MOKVARS EFI_DIR "/mok-variables/"
#define GUID_GLOBAL "-8be4df61-93ca-11d2-aa0d-00e098032b8c"
#define GUID_SHIM "-605dab50-e046-4300-abb6-3dd810dd8b23"
#define GUID_SECURITY "-d719b2cb-3d3a-4596-a3bc-dad00e67656f"
#define LOCKDOWN "/sys/kernel/security/lockdown"
#define DKMS_KEY "/var/lib/dkms/mok.pub"

/* ---- info-sys.c ---- */

void fmt(char *buf, size_t len, const char *f, ...)
	__attribute__((format(printf, 3, 4)));
/* path with the root prefix (NTSYNC_INFO_SYSROOT, for the tests) */
void rooted(char *buf, size_t len, const char *path);
bool rooted_read_line(const char *path, char *buf, size_t len);
bool path_exists(const char *path);
bool find_file(const char *pattern, char *out, size_t len);
int kernel_level(void);

/* ---- the probes, each filling its part of info ---- */

void probe_device(void);	/* info-driver.c */
void probe_driver(void);
void run_checks(void);		/* info-checks.c */
void probe_header(void);	/* info-headers.c */
void probe_secure_boot(void);	/* info-secureboot.c */
bool secure_boot_refuses(void);
void explain_secure_boot(void);
void decide(void);		/* info-verdict.c */

/* ---- the reports ---- */

const char *result_name(enum result r);	/* info-text.c */
void print_text(void);
void print_json(void);		/* info-json.c */
void json_str(const char *s);
void json_str_or_null(const char *s);

/* ---- info-elf.c: the ntsync backend in Wine's binaries ---- */

#define NTSYNC_NREQUESTS 14
struct ntsync_request {
	const char *name;	/* "CREATE_SEM" for NTSYNC_IOC_CREATE_SEM */
	uint32_t value;		/* computed from <linux/ntsync.h> */
};
extern const struct ntsync_request ntsync_requests[NTSYNC_NREQUESTS];

struct wine_binary {
	char path[TEXT * 4];
	const char *role;	/* "wineserver", "ntdll.so" or "file" */
	int err;		/* errno when it could not be read */
	bool elf;
	const char *machine;	/* "x86-64", "i386", "arm64", ... */
	bool wine;		/* has Wine's own strings */
	bool backend;		/* the evidence: request numbers in its code */
	unsigned int nfound;	/* distinct request numbers found */
	unsigned int found_mask;	/* bit i: ntsync_requests[i] */
	bool dev_string;	/* "/dev/ntsync" in it (shown, not evidence) */
	bool backend_request;	/* "get_inproc_sync_fd": a Wine with the backend's source */
};

/* -1 (b->err set) when unreadable, else 0 (b->elf false if not ELF). */
int elf_check(const char *path, struct wine_binary *b);
void requests_text(unsigned int mask, char *buf, size_t len);
void binary_text(const struct wine_binary *b, char *buf, size_t len);
int check_wine(const char *path, bool json);	/* exit status */

/* ---- info-wine.c: is this Wine process using ntsync? ---- */

enum link_state { LINK_OK, LINK_BROKEN, LINK_UNKNOWN };
enum { LINK_DRIVER, LINK_BUILD, LINK_START, LINK_ENV, LINK_VISIBLE,
       NLINKS };
extern const char *const link_names[NLINKS];

struct wine_link {
	enum link_state state;
	/* broken means "not using" even where the descriptors are unread */
	bool certain;
	char found[TEXT * 6];	/* what was found, with its evidence */
	char reason[TEXT * 2];	/* for the verdict, when broken */
	char fix[TEXT * 3];
};

enum wine_status { WINE_USING, WINE_NOT_USING, WINE_UNKNOWN };

struct wine_report {
	int pid;
	char comm[32];
	bool wineserver;	/* the process is a wineserver */
	int server_pid;		/* its wineserver, 0 if none was found */
	char exe[TEXT * 2];
	char ntdll[TEXT * 2];
	int holds;		/* TRI_*: holds the device open */
	unsigned int device_fds, object_fds;
	int fd_err;
	struct wine_link link[NLINKS];
	enum wine_status status;
	char verdict[TEXT * 4];
	char fix[TEXT * 3];
};

/*
 * --pid PID: fills r and returns 0, or returns an EXIT_* status for a
 * process that cannot be reported on, with the reason in why.
 */
int wine_probe_pid(int pid, struct wine_report *r, char *why, size_t len);
/* --wine: every Wine process; returns how many (at most max). */
unsigned int wine_probe_all(struct wine_report *r, unsigned int max,
			    unsigned int *unreadable);
int wine_exit_status(const struct wine_report *r, unsigned int n);

/* info-wine-report.c */
void print_wine_text(const struct wine_report *r, unsigned int n,
		     unsigned int unreadable);
void print_wine_json(const struct wine_report *r, unsigned int n,
		     unsigned int unreadable, int rc);
void print_wine_error_json(int pid, int rc, const char *why);

#endif /* NTSYNC_INFO_H */
