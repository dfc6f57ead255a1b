/*
 * shm transport: the layout of a segment's header, as tp_shm.c writes it
 * and reads its peers'.  Outside transports/shm only tests/mp/test_shm.c
 * includes this header, to tell a segment whose header is written.
 */
#ifndef TUTTI_TP_SHM_SEG_H
#define TUTTI_TP_SHM_SEG_H

#include <stdint.h>

/* The first 8 bytes of a complete segment, one value per header layout.
 * In memory (little-endian) they read "uttism1" and "uttism2" and a NUL:
 * meant as "tuttism1"/"tuttism2", they lack the leading 't'.  They stay as
 * they are: a segment an earlier build left under a job id used again is
 * still recognised, and judged by its owner rather than by its age. */
#define SEG_MAGIC_V1 0x316d7369747475ULL /* version 1: before the probe */
#define SEG_MAGIC 0x326d7369747475ULL    /* version 2 */
#define SEG_HDR_BYTES 4096

/* The header at the start of each segment; the channels follow at
 * SEG_HDR_BYTES.  magic is written last, once the rest is. */
typedef struct {
    _Atomic uint64_t magic;
    uint64_t group_key;
    uint64_t slot_size;
    uint32_t slots;
    int32_t size;
    int32_t rank;
    _Atomic int32_t attached;
    int32_t pid;           /* owner process, for liveness checks */
    /* since version 2 (SEG_MAGIC): */
    uint64_t pid_start;    /* owner's start time (/proc/PID/stat field 22,
                              clock ticks), 0 if unknown: a pid recycled
                              by another process does not match */
    uint64_t probe_addr;   /* address of probe_value in the owner */
    uint64_t probe_value;  /* random, for single-copy detection */
} seg_hdr_t;

_Static_assert(sizeof(seg_hdr_t) <= SEG_HDR_BYTES, "segment header");

/* The owner's doorbell (TUTTI_CHAN_BELL_BYTES, transport ABI 2.3) lives at
 * this offset of the header page, on a line of its own; zero until a
 * member sleeps on it. */
#define SEG_BELL_OFF 2048
_Static_assert(sizeof(seg_hdr_t) <= SEG_BELL_OFF, "segment header");

#endif
