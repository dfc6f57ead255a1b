/*
 * A member of a job that holds the job's secret and breaks every rule
 * after the handshake.  tests/mp/test_tcp_hostile.c starts it, through
 * tutti-run, as task 1 of a job of 3 whose other tasks are tutti-perf
 * over tcp.  It joins the job's control plane as the tcp module would,
 * with the module's own code (its sources are compiled in), then writes
 * to its sockets what MODE names, each frame tagged under the
 * connection's session key as the module tags them (a member can):
 *   active      to task 0: a zero-length fragment that makes the 4 KiB
 *               control receive task 0 keeps posted for task 1 active,
 *               then a fragment that says its message has 1 MiB and
 *               lies at 512 KiB;
 *   unexpected  to task 0: the start of a 16-byte message no receive
 *               waits for (held aside), then a fragment of it that says
 *               1 MiB and lies at 512 KiB;
 *   huge        to task 0: a message of 1 TiB no receive waits for;
 *   group       to task 2: a GROUP table of 7 members (GROUP is task 0's
 *               to send, and the group has 3);
 *   sum         to task 2: a SUM_DONE (task 0's to send);
 *   host        a registration at the rendezvous whose host name has no
 *               end (it joins nothing).
 * It then waits 2 s and exits 0; the others must refuse what it sent,
 * name task 1 and end with an error, not hang or write out of bounds.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tp_tcp.c" /* its static ops table, and the endpoint's types */

#include "job/ctrl.h"
#include "job/wire.h"

#define CTRL_INSTANCE 0xc7c7c7c7c7c7c7c7ULL /* core/job/ctrl.c */

static tutti_status_t h_error(tutti_status_t st, const char *subsys,
                              const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "hostile_peer: %s: ", subsys);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return st;
}

static void h_log(int level, const char *subsys, const char *fmt, ...)
{
    va_list ap;
    if (level > 1)
        return;
    va_start(ap, fmt);
    fprintf(stderr, "hostile_peer: %s: ", subsys);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static double h_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static const tutti_tp_core_ops_t h_core = {
    .size = sizeof(tutti_tp_core_ops_t), .error = h_error, .log = h_log,
    .now = h_now};

/* One frame on @p c: the header @p h (its tag filled here, as
 * tcp_do_send fills it) and @p len body bytes. */
static int send_frame(conn_t *c, frame_t *h, const void *body, size_t len)
{
    h->magic = FRAME_MAGIC;
    h->flags = FRAME_MAC;
    h->sum = 0;
    memset(h->tag, 0, sizeof(h->tag));
    tcp_mac_begin(&c->mac_out);
    tcp_mac_update(&c->mac_out, h, sizeof(*h));
    tcp_mac_update(&c->mac_out, body, len);
    tcp_mac_final(&c->mac_out, h->tag);
    if (tcp_write_full(c->fd, h, sizeof(*h)) != 0 ||
        (len > 0 && tcp_write_full(c->fd, body, len) != 0)) {
        fprintf(stderr, "hostile_peer: write: %s\n", strerror(errno));
        return -1;
    }
    return 0;
}

static frame_t frame(uint32_t seq, uint64_t msg_len, uint64_t off,
                     uint32_t len)
{
    frame_t h;
    memset(&h, 0, sizeof(h));
    h.key = (tutti_wire_key_t){CTRL_INSTANCE, seq, 0};
    h.msg_len = msg_len;
    h.frag_off = off;
    h.frag_len = len;
    return h;
}

/* A control frame of @p type whose payload is @p len bytes at @p pay, as
 * the first frame task 1 sends on @p c. */
static int send_ctrl(conn_t *c, uint32_t type, const void *pay, size_t len)
{
    static tutti__ctrl_msg_t m;
    memset(&m, 0, sizeof(m));
    m.type = type;
    m.len = (uint32_t)len;
    m.group_key = 0x7065726600000000ULL; /* tutti-perf's group */
    m.from_task = 0; /* a lie: the connection names the sender */
    m.device_index = 0;
    memcpy(m.payload, pay, len);
    frame_t h = frame(0, sizeof(m), 0, sizeof(m));
    return send_frame(c, &h, &m, sizeof(m));
}

static int attack(const char *mode, tcp_ep_t *ep)
{
    static char body[1 << 16];
    conn_t *c0 = ep->peers[0].conns[0], *c2 = ep->peers[2].conns[0];
    frame_t h;

    memset(body, 0x41, sizeof(body));
    if (strcmp(mode, "active") == 0) {
        h = frame(0, sizeof(tutti__ctrl_msg_t), 0, 0);
        if (send_frame(c0, &h, NULL, 0) != 0)
            return -1;
        h = frame(0, 1 << 20, 1 << 19, 4096);
        return send_frame(c0, &h, body, 4096);
    }
    if (strcmp(mode, "unexpected") == 0) {
        h = frame(5, 16, 0, 8);
        if (send_frame(c0, &h, body, 8) != 0)
            return -1;
        h = frame(5, 1 << 20, 1 << 19, 4096);
        return send_frame(c0, &h, body, 4096);
    }
    if (strcmp(mode, "huge") == 0) {
        h = frame(7, MSG_MAX, 0, 4096);
        return send_frame(c0, &h, body, 4096);
    }
    if (strcmp(mode, "group") == 0) {
        static char pay[TUTTI_CTRL_PAYLOAD];
        tutti__group_payload_t *gp = (tutti__group_payload_t *)pay;
        memset(pay, 0, sizeof(pay));
        gp->size = 7;
        gp->num_tasks = 3;
        gp->num_hosts = 1;
        for (int i = 0; i < 7; i++)
            gp->members[i].task = i % 3;
        size_t len = sizeof(*gp) + 7 * sizeof(tutti_locality_t) +
                     TUTTI_HOST_NAME_MAX;
        return send_ctrl(c2, TUTTI_CTRL_GROUP, pay, len);
    }
    if (strcmp(mode, "sum") == 0) {
        uint64_t pay[2] = {0, 12345}; /* round 0, a total */
        return send_ctrl(c2, TUTTI_CTRL_SUM_DONE, pay, sizeof(pay));
    }
    fprintf(stderr, "hostile_peer: unknown mode '%s'\n", mode);
    return -1;
}

int main(int argc, char **argv)
{
    const char *rank_s = getenv("TUTTI_RANK"), *size_s = getenv("TUTTI_SIZE");
    const char *job = getenv("TUTTI_JOB_ID");
    const char *timeout_s = getenv("TUTTI_TIMEOUT");
    int rank_task[3] = {0, 1, 2};
    tcp_settings_t set;
    tutti_tp_ep_t *tep = NULL;

    if (argc != 2 || rank_s == NULL || size_s == NULL || job == NULL ||
        atoi(rank_s) != 1 || atoi(size_s) != 3) {
        fprintf(stderr, "usage: tutti-run -n 3 ... hostile_peer MODE, as "
                "task 1\n");
        return 2;
    }
    memset(&set, 0, sizeof(set));
    set.connections = 2; /* the default: the others' */
    set.unexpected = UINT64_C(2) << 30;
    tutti_tp_group_t g = {
        .size = sizeof(g), .job_id = job, .group_key = CTRL_GROUP_KEY,
        .rank = 1, .group_size = 3, .rank_task = rank_task, .task = 1,
        .timeout = timeout_s != NULL ? atof(timeout_s) : 20.0,
        .core = &h_core, .settings = &set, .verify = TUTTI_TP_VERIFY_MAC};

    if (strcmp(argv[1], "host") == 0) {
        tcp_cred_t cred;
        tcp_reg_t reg, peers[3];
        unsigned char want[3] = {0, 0, 0};
        int fd;
        memset(&reg, 0, sizeof(reg));
        if (tcp_mac_lib_init() != 0 ||
            tcp_cred_read(&h_core, job, &cred) != TUTTI_OK ||
            tcp_listen(&h_core, &set, 1, &fd, &reg) != TUTTI_OK)
            return 1;
        cred.job_id = job;
        reg.group_key = CTRL_GROUP_KEY;
        reg.rank = 1;
        reg.group_size = 3;
        reg.nconn = 2;
        memset(reg.host, 'h', sizeof(reg.host)); /* no end */
        tcp_rendezvous(&g, &set, &cred, &reg, want, h_now() + 10, peers);
        sleep(2);
        close(fd);
        return 0;
    }
    if (tcp_ops.connect(&g, &tep) != TUTTI_OK)
        return 1;
    sleep(1); /* the others join tutti-perf's group, and wait */
    int rc = attack(argv[1], (tcp_ep_t *)tep);
    fprintf(stderr, "hostile_peer: sent '%s'%s\n", argv[1],
            rc == 0 ? "" : " (cut short)");
    sleep(2);
    return 0; /* no disconnect: it leaves as a crashed member would */
}
