/*
 * Fuzz target: the YAML configuration (core/config): the file reader,
 * every key's parser, the selection rules and their checks, as a config
 * file of the input's bytes (a memory file, so the reader takes the path
 * a user's file takes).  A refused file must leave an error message.
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
#include "config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static fuzz_memfile_t file;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    tutti__log_set_level(TUTTI_LOG_OFF);
    fuzz_memfile_open(&file, "tutti-fuzz-config");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tutti__config_t cfg;
    fuzz_memfile_set(&file, data, size);
    tutti__config_init(&cfg);
    tutti_status_t st = tutti__config_load_file(&cfg, file.path);
    if (st != TUTTI_OK && tutti_last_error()[0] == '\0')
        abort(); /* every refusal says why */
    tutti__config_free(&cfg);
    return 0;
}
