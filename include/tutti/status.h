/*
 * Tutti status codes.
 *
 * One list generates the enum, tutti_status_name() and tutti_strerror().
 * Negative codes are grouped by what the caller must tear down:
 *   -1..-9    argument: nothing happened, fix the call
 *   -10..-19  operation: this call or request failed, the group is usable
 *   -20..-29  peer: a peer failed or sent garbage, the group should be left
 *   -30..-39  group: the group cannot go on (disagreement, abort)
 *   -40..     fatal: the context should be destroyed
 */
#ifndef TUTTI_STATUS_H
#define TUTTI_STATUS_H

#define TUTTI_STATUS_LIST(X)                                                   \
    X(OK, 0, "success")                                                        \
    X(INPROGRESS, 1, "operation in progress")                                  \
    X(ERR_INVALID_ARG, -1, "invalid argument")                                 \
    X(ERR_UNSUPPORTED, -2, "not supported")                                    \
    X(ERR_NO_MEMORY, -3, "out of memory")                                      \
    X(ERR_NOT_FOUND, -10, "not found")                                         \
    X(ERR_CONFIG, -11, "configuration error")                                  \
    X(ERR_MODULE, -12, "module error")                                         \
    X(ERR_TIMEOUT, -13, "timed out")                                           \
    X(ERR_TRUNCATED, -14, "message size mismatch")                             \
    X(ERR_IO, -15, "system call failed")                                       \
    X(ERR_TOO_SMALL, -16, "receive buffer too small")                          \
    X(ERR_PEER, -20, "peer failed")                                            \
    X(ERR_MISMATCH, -30, "group members disagree")                             \
    X(ERR_ABORTED, -31, "aborted")                                             \
    X(ERR_INTERNAL, -40, "internal error")

typedef enum {
#define TUTTI_STATUS_ENUM_(name, value, text) TUTTI_##name = value,
    TUTTI_STATUS_LIST(TUTTI_STATUS_ENUM_)
#undef TUTTI_STATUS_ENUM_
} tutti_status_t;

#endif
