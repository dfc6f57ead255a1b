/*
 * Registered memory's table (tutti_mem_alloc, tutti_mem_register;
 * base/mem.c): what is found and what is refused, with the messages a
 * caller sees.  That peers read it in place is tests/mp/test_shm.c's.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include <tutti/tutti.h>

#include "base/mem.h"

static void expect_error(tutti_status_t got, tutti_status_t want,
                         const char *text)
{
    assert_int_equal(got, want);
    if (strstr(tutti_last_error(), text) == NULL)
        fail_msg("'%s' not in '%s'", text, tutti_last_error());
}

static void test_alloc_find_free(void **state)
{
    (void)state;
    size_t before = tutti__mem_count();
    void *p = NULL;
    assert_int_equal(tutti_mem_alloc(10000, &p), TUTTI_OK);
    assert_non_null(p);
    assert_int_equal(tutti__mem_count(), before + 1);
    unsigned char *b = p;
    for (size_t i = 0; i < 10000; i++)
        assert_int_equal(b[i], 0); /* zero-filled */
    memset(b, 0x5a, 10000);
    tutti__mem_region_t r;
    assert_int_equal(tutti__mem_find(b + 100, 900, &r), 1);
    assert_int_equal(r.base, (uint64_t)(uintptr_t)p);
    assert_true(r.size >= 10000);
    assert_int_equal(r.size % (uint64_t)sysconf(_SC_PAGESIZE), 0);
    assert_true(r.fd >= 0);
    assert_true(r.serial > 0);
    assert_int_equal(tutti_mem_registered(b + 9999, 1), 1);
    /* past the pages it has, and before it */
    assert_int_equal(tutti__mem_find(b, (size_t)r.size + 1, &r), 0);
    assert_int_equal(tutti_mem_registered(b - 1, 1), 0);
    uint64_t serial = r.serial;
    assert_int_equal(tutti_mem_free(p), TUTTI_OK);
    assert_int_equal(tutti__mem_count(), before);
    assert_int_equal(tutti_mem_registered(p, 1), 0);
    /* A new region never repeats a serial, even at the same address. */
    void *q = NULL;
    assert_int_equal(tutti_mem_alloc(10000, &q), TUTTI_OK);
    assert_int_equal(tutti__mem_find(q, 1, &r), 1);
    assert_true(r.serial > serial);
    assert_int_equal(tutti_mem_free(q), TUTTI_OK);
}

static void test_alloc_refused(void **state)
{
    (void)state;
    void *p = (void *)1;
    expect_error(tutti_mem_alloc(0, &p), TUTTI_ERR_INVALID_ARG, "size is 0");
    assert_ptr_equal(p, (void *)1); /* outputs only on success */
    expect_error(tutti_mem_alloc(16, NULL), TUTTI_ERR_INVALID_ARG,
                 "ptr_out is NULL");
    assert_int_equal(tutti_mem_free(NULL), TUTTI_OK);
    int local;
    expect_error(tutti_mem_free(&local), TUTTI_ERR_INVALID_ARG,
                 "not a buffer tutti_mem_alloc returned");
    assert_int_equal(tutti_mem_alloc(8192, &p), TUTTI_OK);
    expect_error(tutti_mem_free((char *)p + 64), TUTTI_ERR_INVALID_ARG,
                 "not a buffer tutti_mem_alloc returned");
    expect_error(tutti_mem_deregister(p), TUTTI_ERR_INVALID_ARG,
                 "free it with tutti_mem_free");
    /* A range inside it registers as nothing new. */
    size_t n = tutti__mem_count();
    assert_int_equal(tutti_mem_register((char *)p + 10, 100), TUTTI_OK);
    assert_int_equal(tutti__mem_count(), n);
    assert_int_equal(tutti_mem_free(p), TUTTI_OK);
    expect_error(tutti_mem_free(p), TUTTI_ERR_INVALID_ARG,
                 "or it was freed already");
}

static void test_register_private_refused(void **state)
{
    (void)state;
    char *heap = malloc(1 << 20);
    assert_non_null(heap);
    expect_error(tutti_mem_register(heap, 4096), TUTTI_ERR_UNSUPPORTED,
                 "lies in private memory");
    assert_int_equal(tutti_mem_registered(heap, 4096), 0);
    free(heap);
    void *anon = mmap(NULL, 65536, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(anon != MAP_FAILED);
    expect_error(tutti_mem_register(anon, 65536), TUTTI_ERR_UNSUPPORTED,
                 "allocate it with tutti_mem_alloc");
    munmap(anon, 65536);
    expect_error(tutti_mem_register(NULL, 1), TUTTI_ERR_INVALID_ARG,
                 "ptr is NULL");
    expect_error(tutti_mem_register(&state, 0), TUTTI_ERR_INVALID_ARG,
                 "size is 0");
    expect_error(tutti_mem_deregister(&state), TUTTI_ERR_INVALID_ARG,
                 "lies in no registered region");
}

/* A memfd the program mapped itself (no path): found through the
 * descriptor it keeps open; a second registration overlapping it is
 * refused; deregistered, it is gone. */
static void test_register_shared_file(void **state)
{
    (void)state;
    long pg = sysconf(_SC_PAGESIZE);
    int fd = memfd_create("test-mem", MFD_CLOEXEC);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, 16 * pg), 0);
    char *m = mmap(NULL, (size_t)(16 * pg), PROT_READ | PROT_WRITE,
                   MAP_SHARED, fd, 0);
    assert_true(m != MAP_FAILED);
    size_t n = tutti__mem_count();
    assert_int_equal(tutti_mem_register(m + pg + 7, (size_t)(2 * pg)),
                     TUTTI_OK);
    assert_int_equal(tutti__mem_count(), n + 1);
    tutti__mem_region_t r;
    assert_int_equal(tutti__mem_find(m + pg + 7, (size_t)(2 * pg), &r), 1);
    assert_int_equal(r.base, (uint64_t)(uintptr_t)(m + pg));
    assert_int_equal(r.size, (uint64_t)(3 * pg)); /* the pages it touches */
    assert_int_equal(r.file_off, (uint64_t)pg);
    assert_true(r.fd != fd); /* a descriptor of its own */
    expect_error(tutti_mem_register(m, (size_t)(2 * pg)),
                 TUTTI_ERR_INVALID_ARG, "without lying inside it");
    expect_error(tutti_mem_register(m + 8 * pg, (size_t)(20 * pg)),
                 TUTTI_ERR_UNSUPPORTED, "runs past its mapping");
    assert_int_equal(tutti_mem_deregister(m + 2 * pg), TUTTI_OK);
    assert_int_equal(tutti__mem_count(), n);
    assert_int_equal(tutti_mem_registered(m + pg, 1), 0);
    munmap(m, (size_t)(16 * pg));
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_find_free),
        cmocka_unit_test(test_alloc_refused),
        cmocka_unit_test(test_register_private_refused),
        cmocka_unit_test(test_register_shared_file),
    };
    return cmocka_run_group_tests_name("mem", tests, NULL, NULL);
}
