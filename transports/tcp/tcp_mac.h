/*
 * tcp transport: what keeps a connection's bytes whole after its
 * handshake.  Both ends of a connection derive a session key from the
 * handshake's transcript (both nonces, the opening, both proofs) and the
 * job secret; each frame then carries a 16-byte tag, Poly1305 under a
 * one-time key that ChaCha20 draws from the session key, the direction
 * and the frame's number on that connection.  A frame altered, dropped,
 * replayed, reordered or moved to another connection or direction fails
 * its tag: whoever relays a connection after a genuine handshake learns
 * nothing that lets it speak in it.  libsodium does the cryptography.
 */
#ifndef TUTTI_TP_TCP_MAC_H
#define TUTTI_TP_TCP_MAC_H

#include <stddef.h>
#include <stdint.h>

#include <sodium.h>

#include "tcp_int.h"

#define TCP_KEY 32                  /* a session key */
#define TCP_TAG 16                  /* a frame's tag */

/** Which end of a connection sends: the frames of each direction are
 *  numbered apart, under their own one-time keys. */
enum { TCP_DIR_OPENER = 0, TCP_DIR_ACCEPTER = 1 };

/** The MAC state of one direction of a connection. */
typedef struct {
    unsigned char key[TCP_KEY];     /* the session key */
    uint64_t seq;                   /* frames so far this way */
    int dir;                        /* TCP_DIR_* of the sending end */
    crypto_onetimeauth_state st;    /* the frame in progress */
} tcp_mac_t;

/** 0 once libsodium is ready (any thread, any number of times); -1 if
 *  it cannot start (no randomness). */
int tcp_mac_lib_init(void);

/** The session key of a connection whose handshake was @p hs, @p ch and
 *  @p proof, under @p cred's secret: both ends compute the same. */
void tcp_session_key(const tcp_hs_t *hs, const tcp_chal_t *ch,
                     const tcp_proof_t *proof, const tcp_cred_t *cred,
                     unsigned char key[TCP_KEY]);

/** Both directions of a connection under @p key: @p out for the frames
 *  this end sends as @p dir, @p in for those it receives. */
void tcp_mac_setup(tcp_mac_t *out, tcp_mac_t *in,
                   const unsigned char key[TCP_KEY], int dir);

/** Starts the tag of the next frame of @p m's direction. */
void tcp_mac_begin(tcp_mac_t *m);

static inline void tcp_mac_update(tcp_mac_t *m, const void *data,
                                  size_t len)
{
    crypto_onetimeauth_update(&m->st, (const unsigned char *)data, len);
}

/** The tag of the frame begun; @p m is ready for the next begin. */
void tcp_mac_final(tcp_mac_t *m, unsigned char tag[TCP_TAG]);

/** 1 if the frame begun has tag @p tag (compared in constant time). */
int tcp_mac_check(tcp_mac_t *m, const unsigned char tag[TCP_TAG]);

/** The tag of @p len bytes at @p data as the next frame of @p m. */
void tcp_mac_of(tcp_mac_t *m, const void *data, size_t len,
                unsigned char tag[TCP_TAG]);

/** Wipes @p len bytes of key material (never optimised away). */
static inline void tcp_wipe(void *p, size_t len)
{
    sodium_memzero(p, len);
}

#endif
