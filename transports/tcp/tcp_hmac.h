/*
 * tcp transport: SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), for the
 * challenge-response that proves both ends of a connection hold the job
 * secret without sending it.  Small and self-contained: the build has no
 * crypto library.
 */
#ifndef TUTTI_TP_TCP_HMAC_H
#define TUTTI_TP_TCP_HMAC_H

#include <stddef.h>
#include <stdint.h>

#define TCP_SHA256_LEN 32
#define TCP_SHA256_BLOCK 64

/** A SHA-256 computation in progress. */
typedef struct {
    uint32_t h[8];
    uint64_t bytes;                 /* hashed so far */
    unsigned char buf[TCP_SHA256_BLOCK];
    size_t have;                    /* bytes waiting in buf */
} tcp_sha256_t;

void tcp_sha256_init(tcp_sha256_t *s);
void tcp_sha256_update(tcp_sha256_t *s, const void *data, size_t len);
void tcp_sha256_final(tcp_sha256_t *s, unsigned char out[TCP_SHA256_LEN]);

/** An HMAC-SHA256 in progress: the inner hash, and the outer key pad. */
typedef struct {
    tcp_sha256_t inner;
    unsigned char opad[TCP_SHA256_BLOCK];
} tcp_hmac_t;

void tcp_hmac_init(tcp_hmac_t *m, const void *key, size_t key_len);
void tcp_hmac_update(tcp_hmac_t *m, const void *data, size_t len);
void tcp_hmac_final(tcp_hmac_t *m, unsigned char out[TCP_SHA256_LEN]);

/** 1 if the @p len bytes at @p a and @p b are equal, in a time that does
 *  not depend on where they differ. */
int tcp_equal_ct(const void *a, const void *b, size_t len);

#endif
