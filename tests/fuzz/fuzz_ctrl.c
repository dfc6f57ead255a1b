/*
 * Fuzz target: the control plane's frames as task 0 of a job of 4 receives
 * them from the wire: tutti__ctrl_accept() first, then the coordinator's,
 * the members', the health and the sum handlers.  Each input is a
 * sequence of frames, each a byte naming the sending task, two bytes of
 * length (little-endian), then that many bytes of the frame (header and
 * payload; the rest of the 4096 is zero).  A fresh job per input; the
 * handlers' replies have no control plane to go to, and say so.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tutti/tutti.h>

#include "base/log.h"
#include "config/config.h"
#include "job/coordinator.h"
#include "job/ctrl.h"
#include "job/health.h"
#include "job/job.h"
#include "job/member.h"
#include "job/sum.h"
#include "plugin/registry.h"

#define TASKS 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static tutti__config_t cfg;
static tutti__registry_t reg;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    tutti__log_set_level(TUTTI_LOG_OFF);
    tutti__config_init(&cfg);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static tutti__ctrl_msg_t msg;
    tutti__job_t job;
    if (tutti__job_init(&job, 0, TASKS, 1, "fuzz", &cfg, &reg) != TUTTI_OK ||
        tutti__coord_init(&job) != TUTTI_OK ||
        tutti__member_init(&job) != TUTTI_OK)
        abort();
    tutti__health_init(&job);
    tutti__sum_init(&job);
    while (size >= 3) {
        int from = data[0] % TASKS;
        size_t n = (size_t)data[1] | (size_t)data[2] << 8;
        data += 3;
        size -= 3;
        if (n > size)
            n = size;
        if (n > sizeof(msg))
            n = sizeof(msg);
        memset(&msg, 0, sizeof(msg));
        memcpy(&msg, data, n);
        data += n;
        size -= n;
        char why[160];
        pthread_mutex_lock(&job.lock);
        if (tutti__ctrl_accept(&msg, from, TASKS, why, sizeof(why)))
            tutti__job_dispatch(&job, &msg);
        pthread_mutex_unlock(&job.lock);
    }
    tutti__member_fini(&job);
    tutti__coord_fini(&job);
    tutti__job_fini(&job);
    return 0;
}
