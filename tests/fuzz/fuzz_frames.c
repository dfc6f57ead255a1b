/*
 * Fuzz target: what a joined peer sends after the handshake, read by the
 * tcp module's receive state machine (tcp_recv.c) as an endpoint reads
 * it.  The input's first byte sets the endpoint up: bit 0 verify mac,
 * bit 1 verify checksum, bit 2 receives posted before the bytes arrive
 * (else after the first pass, as a late receive finds frames held or put
 * aside).  The rest is the stream one socket of peer 0 carries: frame
 * headers (frame_t) and bodies, through a socket pair.  Three receives
 * wait: 4096 bytes (key 1/0/0), 1024 reduced as float32 sums (1/1/0) and
 * an empty one (2/0/0), each in a buffer of exactly its size, so that a
 * byte written past one is a finding; tcp.unexpected is 1 MiB.  Whatever
 * the bytes, every receive ends (done, truncated or failed) or waits, and
 * the bytes held aside are counted back to zero once freed.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tcp_ep.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static tutti_status_t f_error(tutti_status_t st, const char *subsys,
                              const char *fmt, ...)
{
    (void)subsys;
    (void)fmt;
    return st;
}

static void f_log(int level, const char *subsys, const char *fmt, ...)
{
    (void)level;
    (void)subsys;
    (void)fmt;
}

static double f_now(void)
{
    return 0.0;
}

static const tutti_tp_core_ops_t core = {
    .size = sizeof(tutti_tp_core_ops_t), .error = f_error, .log = f_log,
    .now = f_now};

static void add_f32(tutti_dtype_t dtype, tutti_op_t op, void *dst,
                    const void *a, const void *b, size_t count)
{
    (void)dtype;
    (void)op;
    for (size_t i = 0; i < count; i++) {
        float x, y;
        memcpy(&x, (const char *)a + 4 * i, 4);
        memcpy(&y, (const char *)b + 4 * i, 4);
        x += y;
        memcpy((char *)dst + 4 * i, &x, 4);
    }
}

#define NOPS 3

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const unsigned char zero_key[TCP_KEY];
    static const int rank_task[2] = {0, 1};
    static const size_t lens[NOPS] = {4096, 1024, 0};
    tcp_ep_t ep;
    peer_t peers[2];
    tutti_tp_op_t ops[NOPS];
    char *bufs[NOPS], *local;
    int sv[2];

    if (size < 1 || size > (1u << 16))
        return 0;
    uint8_t opt = data[0];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0)
        abort();
    int sndbuf = 1 << 20;
    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf));
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    for (size_t at = 1; at < size;) {
        ssize_t n = write(sv[1], data + at, size - at);
        if (n <= 0)
            abort(); /* 64 KiB fit a socket pair's buffer */
        at += (size_t)n;
    }
    shutdown(sv[1], SHUT_WR);

    memset(&ep, 0, sizeof(ep));
    memset(peers, 0, sizeof(peers));
    ep.core = &core;
    ep.rank = 1;
    ep.size = 2;
    ep.rank_task = rank_task;
    ep.peers = peers;
    ep.epfd = ep.dsc.fd = -1;
    ep.set.connections = 1;
    ep.set.unexpected = 1u << 20;
    ep.mac = opt & 1;
    ep.verify = !ep.mac && (opt & 2);
    ep.check = ep.mac || ep.verify;
    pthread_mutex_init(&ep.lock, NULL);
    peers[0].serve = 1;

    conn_t *c = calloc(1, sizeof(*c));
    if (c == NULL || (c->stage = malloc(STAGE_BYTES)) == NULL)
        abort();
    c->kind = C_DATA;
    c->fd = sv[0];
    c->peer = 0;
    c->ended = 1; /* read until recv() says the stream ended */
    tcp_mac_setup(&c->mac_out, &c->mac_in, zero_key, TCP_DIR_ACCEPTER);
    peers[0].conns[0] = c;

    local = calloc(1, 1024);
    for (int i = 0; i < NOPS; i++) {
        bufs[i] = malloc(lens[i] ? lens[i] : 1);
        if (bufs[i] == NULL || local == NULL)
            abort();
        memset(&ops[i], 0, sizeof(ops[i]));
        ops[i].key = (tutti_wire_key_t){i == 2 ? 2 : 1, i == 1, 0};
        ops[i].peer = 0;
        ops[i].is_recv = 1;
        ops[i].status = TUTTI_INPROGRESS;
        ops[i].rbuf = bufs[i];
        ops[i].len = lens[i];
    }
    ops[1].reduce = (tutti_tp_reduce_t){add_f32, TUTTI_FLOAT32, TUTTI_OP_SUM,
                                        local};
    int posted = 0;
    if (opt & 4) {
        for (int i = 0; i < NOPS; i++)
            tcp_post_recv(&ep, &ops[i]);
        posted = 1;
    }
    for (int pass = 0; pass < 2; pass++) {
        for (int k = 0; k < 64 && c->fd >= 0 && !c->held; k++)
            tcp_do_recv(&ep, c);
        if (!posted) {
            for (int i = 0; i < NOPS; i++)
                tcp_post_recv(&ep, &ops[i]);
            posted = 1;
        }
    }
    for (int i = 0; i < NOPS; i++) {
        tutti_status_t st = ops[i].status;
        if (st == TUTTI_OK && ops[i].done != ops[i].len)
            abort(); /* complete, but not every byte came */
    }
    while (peers[0].unexp != NULL) {
        unexp_t *u = peers[0].unexp;
        peers[0].unexp = u->next;
        tcp_unexp_free(&ep, u);
    }
    if (ep.unexp_bytes != 0)
        abort(); /* the bytes held aside were miscounted */
    if (c->fd >= 0)
        close(c->fd);
    close(sv[1]);
    tcp_conn_free(c);
    for (int i = 0; i < NOPS; i++)
        free(bufs[i]);
    free(local);
    pthread_mutex_destroy(&ep.lock);
    return 0;
}
