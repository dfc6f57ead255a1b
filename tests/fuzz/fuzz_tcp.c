/*
 * Fuzz target: what the tcp transport reads from others before it trusts
 * them.  The input's first byte picks the reader:
 *   0  a handshake opening (tcp_hs_t), then the accepting side's challenge
 *      (tcp_chal_t) and the opener's proof (tcp_proof_t), as they arrive:
 *      each checked against this job's credentials as the module does, and
 *      a forged answer must never pass (the fuzzer does not know the
 *      secret, so a check that passes on its bytes is a finding);
 *   1  a rendezvous file's text, read as the module reads the file.
 * The frames of joined peers are read by the endpoint's receive state
 * machine, which needs connected sockets: not covered here.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tcp_int.h"
#include "tcp_rdvfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static tcp_cred_t cred;
static char dir[64], file[128];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* A secret the input cannot know. */
    FILE *f = fopen("/dev/urandom", "rb");
    if (f == NULL || fread(cred.secret, 1, 32, f) != 32)
        abort();
    fclose(f);
    cred.secret_len = 32;
    cred.job_id = "fuzzjob";
    snprintf(dir, sizeof(dir), "/tmp/tutti-fuzz-tcp-XXXXXX");
    if (mkdtemp(dir) == NULL)
        abort();
    snprintf(file, sizeof(file), "%s/rdv-fuzzjob", dir);
    return 0;
}

static void handshake(const uint8_t *data, size_t size)
{
    tcp_hs_t hs;
    tcp_chal_t ch;
    tcp_proof_t proof, mine;
    memset(&hs, 0, sizeof(hs));
    memcpy(&hs, data, size < sizeof(hs) ? size : sizeof(hs));
    const uint8_t *rest = data + (size < sizeof(hs) ? size : sizeof(hs));
    size_t left = size - (size_t)(rest - data);
    for (uint32_t kind = 0; kind < 4; kind++)
        (void)tcp_hs_check(&hs, &cred, kind);
    memset(&ch, 0, sizeof(ch));
    memcpy(&ch, rest, left < sizeof(ch) ? left : sizeof(ch));
    rest += left < sizeof(ch) ? left : sizeof(ch);
    left -= left < sizeof(ch) ? left : sizeof(ch);
    memset(&proof, 0, sizeof(proof));
    memcpy(&proof, rest, left < sizeof(proof) ? left : sizeof(proof));
    /* Without the secret, neither a challenge nor a proof can pass. */
    if (tcp_chal_check(&hs, &cred, &ch, &mine) == 0)
        abort();
    if (tcp_proof_check(&hs, &cred, &ch, &proof) == 0)
        abort();
}

static void rendezvous_file(const uint8_t *data, size_t size)
{
    char host[256], why[256];
    unsigned port = 0;
    unlink(file);
    int fd = open(file, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0 || write(fd, data, size) != (ssize_t)size)
        abort();
    close(fd);
    /* As the private file (a pid needed) and as the shared one. */
    for (int need_pid = 0; need_pid < 2; need_pid++) {
        int r = tcp_rdv_read(file, need_pid, host, &port, why, sizeof(why));
        if (r == TCP_RDV_OK && (memchr(host, '\0', sizeof(host)) == NULL ||
                                port > 65535))
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0)
        return 0;
    if (data[0] % 2 == 0)
        handshake(data + 1, size - 1);
    else
        rendezvous_file(data + 1, size - 1);
    return 0;
}
