/*
 * tcp transport: HMAC-SHA256 (RFC 2104), for the challenge-response that
 * proves both ends of a connection hold the job secret without sending
 * it, and for the session key (tcp_mac.h).  libsodium computes it; these
 * names keep the handshake's code apart from the library's.
 */
#ifndef TUTTI_TP_TCP_HMAC_H
#define TUTTI_TP_TCP_HMAC_H

#include <stddef.h>
#include <stdint.h>

#include <sodium.h>

#define TCP_SHA256_LEN 32

/** An HMAC-SHA256 in progress. */
typedef crypto_auth_hmacsha256_state tcp_hmac_t;

static inline void tcp_hmac_init(tcp_hmac_t *m, const void *key,
                                 size_t key_len)
{
    crypto_auth_hmacsha256_init(m, (const unsigned char *)key, key_len);
}

static inline void tcp_hmac_update(tcp_hmac_t *m, const void *data,
                                   size_t len)
{
    crypto_auth_hmacsha256_update(m, (const unsigned char *)data, len);
}

static inline void tcp_hmac_final(tcp_hmac_t *m,
                                  unsigned char out[TCP_SHA256_LEN])
{
    crypto_auth_hmacsha256_final(m, out);
    sodium_memzero(m, sizeof(*m));
}

/** 1 if the @p len bytes at @p a and @p b are equal, in a time that does
 *  not depend on where they differ. */
static inline int tcp_equal_ct(const void *a, const void *b, size_t len)
{
    return sodium_memcmp(a, b, len) == 0;
}

#endif
