/*
 * LD_PRELOAD shim for test_tcp_hostile: TUTTI_TEST_RELAY=FROM:TO makes
 * every connect() to a loopback port FROM go to port TO of the same
 * loopback address instead, where the test's relay waits, as a spoofed
 * route would put a stranger between two members of a job.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*connect_fn)(int, const struct sockaddr *, socklen_t);

__attribute__((visibility("default"))) int
connect(int fd, const struct sockaddr *sa, socklen_t len)
{
    connect_fn real = (connect_fn)(void (*)(void))dlsym(RTLD_NEXT, "connect");
    const char *env = getenv("TUTTI_TEST_RELAY");
    unsigned from, to;
    struct sockaddr_storage ss;

    if (real == NULL)
        return -1;
    if (env == NULL || sscanf(env, "%u:%u", &from, &to) != 2 ||
        len > sizeof(ss) || sa == NULL)
        return real(fd, sa, len);
    memcpy(&ss, sa, len);
    if (ss.ss_family == AF_INET) {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        if (ntohs(a->sin_port) != from)
            return real(fd, sa, len);
        a->sin_port = htons((uint16_t)to);
    } else if (ss.ss_family == AF_INET6) {
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        if (ntohs(a->sin6_port) != from)
            return real(fd, sa, len);
        a->sin6_port = htons((uint16_t)to);
    } else {
        return real(fd, sa, len);
    }
    return real(fd, (struct sockaddr *)&ss, len);
}
