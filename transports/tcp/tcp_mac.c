/*
 * tcp transport: session keys and frame tags (tcp_mac.h).
 */
#include <string.h>

#include "tcp_hmac.h"
#include "tcp_mac.h"

int tcp_mac_lib_init(void)
{
    return sodium_init() < 0 ? -1 : 0;
}

void tcp_session_key(const tcp_hs_t *hs, const tcp_chal_t *ch,
                     const tcp_proof_t *proof, const tcp_cred_t *cred,
                     unsigned char key[TCP_KEY])
{
    static const char label[] = "tutti-tcp-session-1";
    tcp_hmac_t m;
    tcp_hmac_init(&m, cred->secret, cred->secret_len);
    tcp_hmac_update(&m, label, sizeof(label));
    tcp_hmac_update(&m, hs, sizeof(*hs));
    tcp_hmac_update(&m, ch, sizeof(*ch));
    tcp_hmac_update(&m, proof, sizeof(*proof));
    tcp_hmac_final(&m, key);
    tcp_wipe(&m, sizeof(m));
}

void tcp_mac_setup(tcp_mac_t *out, tcp_mac_t *in,
                   const unsigned char key[TCP_KEY], int dir)
{
    memcpy(out->key, key, TCP_KEY);
    memcpy(in->key, key, TCP_KEY);
    out->seq = 0;
    in->seq = 0;
    out->dir = dir;
    in->dir = dir == TCP_DIR_OPENER ? TCP_DIR_ACCEPTER : TCP_DIR_OPENER;
}

void tcp_mac_begin(tcp_mac_t *m)
{
    /* The nonce: the direction, then the frame's number; a one-time key
     * is never drawn twice under one session key. */
    unsigned char nonce[crypto_stream_chacha20_ietf_NONCEBYTES] = {0};
    unsigned char otk[crypto_onetimeauth_KEYBYTES];
    nonce[0] = (unsigned char)m->dir;
    for (int i = 0; i < 8; i++)
        nonce[4 + i] = (unsigned char)(m->seq >> (8 * i));
    m->seq++;
    crypto_stream_chacha20_ietf(otk, sizeof(otk), nonce, m->key);
    crypto_onetimeauth_init(&m->st, otk);
    tcp_wipe(otk, sizeof(otk));
}

void tcp_mac_final(tcp_mac_t *m, unsigned char tag[TCP_TAG])
{
    crypto_onetimeauth_final(&m->st, tag);
}

int tcp_mac_check(tcp_mac_t *m, const unsigned char tag[TCP_TAG])
{
    unsigned char want[TCP_TAG];
    crypto_onetimeauth_final(&m->st, want);
    return crypto_verify_16(want, tag) == 0;
}

void tcp_mac_of(tcp_mac_t *m, const void *data, size_t len,
                unsigned char tag[TCP_TAG])
{
    tcp_mac_begin(m);
    tcp_mac_update(m, data, len);
    tcp_mac_final(m, tag);
}
