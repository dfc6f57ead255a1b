/*
 * Fuzz target: the checks the loader makes on a module before it trusts
 * it (core/plugin/check.c): the file's ELF headers before dlopen maps it
 * (the input is the file), the lookup of the symbol table's object that
 * holds an address (core/plugin/image.c, reading the same file: its
 * sections and symbols are the input's), and the names and texts a
 * descriptor hands the core (the input split at its first NUL).  A file
 * that passes the ELF check must have the headers the check promises
 * within its bytes; an object found must be one of the input's.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <tutti/tutti.h>

#include "base/log.h"
#include "fuzz_memfile.h"
#include "plugin/check.h"
#include "plugin/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static fuzz_memfile_t file;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    tutti__log_set_level(TUTTI_LOG_OFF);
    fuzz_memfile_open(&file, "tutti-fuzz-module");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char why[512], text[256];
    fuzz_memfile_set(&file, data, size);
    if (tutti__elf_check(file.path, why, sizeof(why)) && size < 64)
        abort(); /* passed with less than an ELF header */
    uint64_t avail = 0, at = size >= 8 ? data[size - 1] * 64u : 0;
    char name[64];
    if (tutti__elf_object(file.path, at, &avail, name, sizeof(name)) &&
        (avail == 0 || strlen(name) == 0 || strlen(name) >= sizeof(name)))
        abort(); /* an object holds at least the byte asked about */
    size_t n = size < sizeof(text) - 1 ? size : sizeof(text) - 1;
    memcpy(text, data, n);
    text[n] = '\0';
    if (tutti__name_check("fuzzed name", text, why, sizeof(why))) {
        size_t len = strlen(text);
        if (len == 0 || len >= TUTTI_NAME_MAX)
            abort();
        for (size_t i = 0; i < len; i++)
            if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                        "0123456789_.-", text[i]))
                abort();
    }
    if (tutti__text_check("fuzzed text", text, 100, 0, why, sizeof(why)))
        for (const char *c = text; *c; c++)
            if (*c < ' ' || *c > '~')
                abort();
    (void)tutti__head_text_ok(text, text + strlen(text) / 2, why, sizeof(why));
    return 0;
}
