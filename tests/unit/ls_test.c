/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The runner and scratch-directory helpers behind ls_test.h, linked into
 * every unit suite. It calls no suite code (the suite comes in as a
 * function pointer), so the files of a suite only ever call down into it.
 */
#include <check.h>
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>

#include "ls_test.h"

uint64_t ls_rng_state;
char ls_test_tmpdir[256];

int
ls_test_main_eal(Suite *(*suite_fn)(void), const char *name, const char *mem_mb)
{
	char prefix[64], prog[64], mem[16];
	char *eal[] = {prog, "--no-huge", "-m", mem, "--no-pci", "--no-telemetry",
		       "--log-level", "lib.eal:error", "--file-prefix", prefix};
	SRunner *sr;
	int failed;

	snprintf(prog, sizeof(prog), "test_%s", name);
	snprintf(mem, sizeof(mem), "%s", mem_mb);
	snprintf(prefix, sizeof(prefix), "ls%stest%d", name, (int)getpid());
	if (rte_eal_init((int)(sizeof(eal) / sizeof(eal[0])), eal) < 0) {
		fprintf(stderr, "%s: EAL init failed\n", prog);
		return EXIT_FAILURE;
	}
	sr = srunner_create(suite_fn());
	srunner_set_fork_status(sr, CK_NOFORK); /* EAL state does not survive fork */
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	rte_eal_cleanup();
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

int
ls_test_main(Suite *(*suite_fn)(void), int (*setup)(void), void (*teardown)(void))
{
	SRunner *sr;
	int failed;

	if (setup != NULL && setup() != 0)
		return EXIT_FAILURE;
	sr = srunner_create(suite_fn());
	/* each test in its own process, unless CK_FORK=no says otherwise (the
	 * aarch64 job under qemu-user, whose forked children hang) */
	if (getenv("CK_FORK") == NULL)
		srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	if (teardown != NULL)
		teardown();
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

int
ls_test_tmpdir_make(const char *name)
{
	const char *base = getenv("TMPDIR");

	snprintf(ls_test_tmpdir, sizeof(ls_test_tmpdir), "%s/%s.XXXXXX",
		 base != NULL ? base : "/tmp", name);
	if (mkdtemp(ls_test_tmpdir) == NULL) {
		perror("mkdtemp");
		return -1;
	}
	return 0;
}

void
ls_test_tmpdir_remove(void)
{
	char path[512];
	struct dirent *de;
	DIR *d = opendir(ls_test_tmpdir);

	if (d == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", ls_test_tmpdir, de->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(ls_test_tmpdir);
}

const char *
ls_test_write_json(const char *name, const char *text, char *path, size_t len)
{
	FILE *f;

	snprintf(path, len, "%s/%s", ls_test_tmpdir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	for (const char *p = text; *p != '\0'; p++)
		fputc(*p == '\'' ? '"' : *p, f);
	fclose(f);
	return path;
}
