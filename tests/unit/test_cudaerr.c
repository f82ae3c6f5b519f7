// SPDX-License-Identifier: GPL-2.0
/*
 * user/event/cudaerr.c and user/event/cuda_errors.def: CUDA error names. With a CUDA
 * toolkit, every entry of the table is also proved at compile time to be the
 * header's own enumerator with the header's own value.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "event/cudaerr.h"

#if __has_include(<driver_types.h>) && __has_include(<cuda.h>)
#include <driver_types.h>
#include <cuda.h>
#define HAVE_CUDA_HEADERS 1

/* a misspelt name fails to compile; a wrong value fails the assertion */
#define MT_CUDART_ERR(name, value) _Static_assert((name) == (value), #name);
#define MT_CU_ERR(name, value) _Static_assert((name) == (value), #name);
#include "event/cuda_errors.def"
#undef MT_CUDART_ERR
#undef MT_CU_ERR
#else
#define HAVE_CUDA_HEADERS 0
#endif

struct entry {
	enum mt_errdomain domain;
	int code;
	const char *name;
};

/* the whole table, as the tool was built with it */
static const struct entry table[] = {
#define MT_CUDART_ERR(name, value) { MT_ERR_CUDART, value, #name },
#define MT_CU_ERR(name, value) { MT_ERR_CU, value, #name },
#include "event/cuda_errors.def"
#undef MT_CUDART_ERR
#undef MT_CU_ERR
};

#define N_TABLE (sizeof(table) / sizeof(table[0]))

static void test_known_runtime_codes(void **state)
{
	assert_string_equal(mt_cuda_err_name(MT_ERR_CUDART, 0), "cudaSuccess");
	assert_string_equal(mt_cuda_err_name(MT_ERR_CUDART, 1),
			    "cudaErrorInvalidValue");
	assert_string_equal(mt_cuda_err_name(MT_ERR_CUDART, 2),
			    "cudaErrorMemoryAllocation");
	assert_string_equal(mt_cuda_err_name(MT_ERR_CUDART, 35),
			    "cudaErrorInsufficientDriver");
	assert_string_equal(mt_cuda_err_name(MT_ERR_CUDART, 100),
			    "cudaErrorNoDevice");
	assert_string_equal(mt_cuda_err_name(MT_ERR_CUDART, 999),
			    "cudaErrorUnknown");
}

static void test_known_driver_codes(void **state)
{
	assert_string_equal(mt_cuda_err_name(MT_ERR_CU, 0), "CUDA_SUCCESS");
	assert_string_equal(mt_cuda_err_name(MT_ERR_CU, 1),
			    "CUDA_ERROR_INVALID_VALUE");
	assert_string_equal(mt_cuda_err_name(MT_ERR_CU, 2),
			    "CUDA_ERROR_OUT_OF_MEMORY");
	assert_string_equal(mt_cuda_err_name(MT_ERR_CU, 100),
			    "CUDA_ERROR_NO_DEVICE");
	assert_string_equal(mt_cuda_err_name(MT_ERR_CU, 999),
			    "CUDA_ERROR_UNKNOWN");
}

static void test_unknown_codes(void **state)
{
	/* gaps in the runtime's numbering */
	assert_null(mt_cuda_err_name(MT_ERR_CUDART, 10));
	assert_null(mt_cuda_err_name(MT_ERR_CUDART, 11));
	assert_null(mt_cuda_err_name(MT_ERR_CUDART, -1));
	assert_null(mt_cuda_err_name(MT_ERR_CUDART, 1000));
	assert_null(mt_cuda_err_name(MT_ERR_CUDART, INT_MAX));
	assert_null(mt_cuda_err_name(MT_ERR_CUDART, INT_MIN));
	/* 35 is a runtime code only: the domains are separate tables */
	assert_null(mt_cuda_err_name(MT_ERR_CU, 35));
	assert_null(mt_cuda_err_name(MT_ERR_CU, 12345));
	assert_null(mt_cuda_err_name(MT_ERR_CU, -1));
	/* a call without an error domain has no names */
	assert_null(mt_cuda_err_name(MT_ERR_NONE, 0));
	assert_null(mt_cuda_err_name(MT_ERR_NONE, 2));
	assert_null(mt_cuda_err_name((enum mt_errdomain)7, 2));
}

/* every entry is found by its code, under its own name, and only once */
static void test_table_consistent(void **state)
{
	size_t n_rt = 0, n_cu = 0;

	for (size_t i = 0; i < N_TABLE; i++) {
		const struct entry *e = &table[i];
		const char *got = mt_cuda_err_name(e->domain, e->code);

		if (e->domain == MT_ERR_CUDART) {
			n_rt++;
			assert_true(!strncmp(e->name, "cuda", 4));
		} else {
			n_cu++;
			assert_true(!strncmp(e->name, "CUDA_", 5));
		}
		if (!got || strcmp(got, e->name))
			fail_msg("%s (%d): looked up as %s", e->name, e->code,
				 got ? got : "NULL");
		for (size_t j = 0; j < i; j++) {
			if (table[j].domain == e->domain &&
			    table[j].code == e->code)
				fail_msg("%s and %s share the code %d",
					 table[j].name, e->name, e->code);
			if (!strcmp(table[j].name, e->name))
				fail_msg("%s is listed twice", e->name);
		}
	}
	/* both halves of the table are there (CUDA 13: 133 and 101) */
	assert_true(n_rt >= 100);
	assert_true(n_cu >= 90);
}

/* only running out of memory is an OOM: no driver is a failed call */
static void test_is_oom(void **state)
{
	(void)state;
	assert_true(mt_cuda_err_is_oom(MT_ERR_CUDART, 2));
	assert_true(mt_cuda_err_is_oom(MT_ERR_CU, 2));
	assert_false(mt_cuda_err_is_oom(MT_ERR_CUDART, 35));
	assert_false(mt_cuda_err_is_oom(MT_ERR_CUDART, 0));
	assert_false(mt_cuda_err_is_oom(MT_ERR_CU, 34)); /* stub library */
	assert_false(mt_cuda_err_is_oom(MT_ERR_NCCL, 2));
	assert_false(mt_cuda_err_is_oom(MT_ERR_NONE, 2));
}

static void test_matches_headers(void **state)
{
#if HAVE_CUDA_HEADERS
	/*
	 * The _Static_asserts above did the work when this file compiled;
	 * check at run time that they saw the table and the headers.
	 */
	assert_int_equal(cudaErrorInsufficientDriver, 35);
	assert_int_equal(CUDA_ERROR_OUT_OF_MEMORY, 2);
	assert_string_equal(
		mt_cuda_err_name(MT_ERR_CUDART, cudaErrorMemoryAllocation),
		"cudaErrorMemoryAllocation");
	assert_string_equal(mt_cuda_err_name(MT_ERR_CU, CUDA_ERROR_UNKNOWN),
			    "CUDA_ERROR_UNKNOWN");
	assert_true(
		mt_cuda_err_is_oom(MT_ERR_CUDART, cudaErrorMemoryAllocation));
	assert_true(mt_cuda_err_is_oom(MT_ERR_CU, CUDA_ERROR_OUT_OF_MEMORY));
	print_message("table checked against the CUDA %d headers\n",
		      CUDA_VERSION);
#else
	print_message("skipped: no <driver_types.h> and <cuda.h>: "
		      "no CUDA toolkit to check the table against\n");
	skip();
#endif
}

#if HAVE_CUDA_HEADERS
/*
 * Every enumerator between the lines begin and end of the header at path is
 * in the table under domain: a table older than the toolkit misses some.
 * Returns how many were checked.
 */
static size_t check_header_enum(const char *path, const char *begin,
				const char *end, const char *prefix,
				enum mt_errdomain domain)
{
	char line[1024], name[128];
	bool in = false;
	size_t n = 0;
	FILE *f;
	int value;

	f = fopen(path, "re");
	if (!f)
		fail_msg("%s: cannot open", path);
	while (fgets(line, sizeof(line), f)) {
		const char *got;

		line[strcspn(line, "\n")] = '\0';
		if (!in) {
			in = !strcmp(line, begin);
			continue;
		}
		if (!strcmp(line, end))
			break;
		if (sscanf(line, " %127[A-Za-z0-9_] = %d", name, &value) != 2 ||
		    strncmp(name, prefix, strlen(prefix)))
			continue;
		got = mt_cuda_err_name(domain, value);
		if (!got || strcmp(got, name))
			fail_msg("%s = %d is named %s: regenerate the table "
				 "with scripts/gen-cuda-errors.sh",
				 name, value, got ? got : "NULL");
		n++;
	}
	fclose(f);
	return n;
}

/* the CUDA_VERSION that the header at path defines, or -1 */
static int header_version(const char *path)
{
	char line[256];
	int v = -1;
	FILE *f = fopen(path, "re");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "#define CUDA_VERSION %d", &v) == 1)
			break;
	fclose(f);
	return v;
}
#endif

/* every error code of the headers has its name in the table */
static void test_headers_complete(void **state)
{
#if HAVE_CUDA_HEADERS
	const char *home = getenv("CUDA_HOME");
	char dt[PATH_MAX], cu[PATH_MAX];
	size_t n;

	if (!home || !home[0])
		home = "/usr/local/cuda";
	snprintf(dt, sizeof(dt), "%s/include/driver_types.h", home);
	snprintf(cu, sizeof(cu), "%s/include/cuda.h", home);
	/* read the headers this file was compiled with, or none */
	if (header_version(cu) != CUDA_VERSION) {
		print_message("skipped: %s is not the CUDA %d header this "
			      "test was built with\n",
			      cu, CUDA_VERSION);
		skip();
	}
	n = check_header_enum(dt, "enum __device_builtin__ cudaError", "};",
			      "cuda", MT_ERR_CUDART);
	if (n < 100)
		fail_msg("%s: read %zu runtime error codes", dt, n);
	n = check_header_enum(cu, "typedef enum cudaError_enum {",
			      "} CUresult;", "CUDA_", MT_ERR_CU);
	if (n < 90)
		fail_msg("%s: read %zu driver error codes", cu, n);
#else
	print_message("skipped: no CUDA toolkit headers\n");
	skip();
#endif
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_known_runtime_codes),
		cmocka_unit_test(test_known_driver_codes),
		cmocka_unit_test(test_unknown_codes),
		cmocka_unit_test(test_table_consistent),
		cmocka_unit_test(test_is_oom),
		cmocka_unit_test(test_matches_headers),
		cmocka_unit_test(test_headers_complete),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
