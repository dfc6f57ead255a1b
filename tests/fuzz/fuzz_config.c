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
#include "config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static int fd = -1;
static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    tutti__log_set_level(TUTTI_LOG_OFF);
    fd = memfd_create("tutti-fuzz-config", 0);
    if (fd < 0)
        abort();
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tutti__config_t cfg;
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        abort();
    tutti__config_init(&cfg);
    tutti_status_t st = tutti__config_load_file(&cfg, path);
    if (st != TUTTI_OK && tutti_last_error()[0] == '\0')
        abort(); /* every refusal says why */
    tutti__config_free(&cfg);
    return 0;
}
