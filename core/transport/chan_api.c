/* The channels behind the transport ops of the core's transports
 * (tutti_tp_ops_t) and behind the opaque tutti_chan_ep_t that transport
 * modules use through tutti_tp_core_ops_t (chan.h). */
#include <stdlib.h>

#include "transport/chan.h"
#include "base/log.h"

tutti_status_t tutti__chan_tp_send(tutti_tp_ep_t *ep, tutti_tp_op_t *op)
{
    return tutti__chan_send((tutti__chan_ep_t *)ep, op);
}

tutti_status_t tutti__chan_tp_recv(tutti_tp_ep_t *ep, tutti_tp_op_t *op)
{
    return tutti__chan_recv((tutti__chan_ep_t *)ep, op);
}

int tutti__chan_tp_progress(tutti_tp_ep_t *ep)
{
    return tutti__chan_progress((tutti__chan_ep_t *)ep);
}

int tutti__chan_tp_sleep(tutti_tp_ep_t *ep, double seconds)
{
    return tutti__chan_sleep((tutti__chan_ep_t *)ep, seconds);
}

/* ---- the channels as transport modules see them (tutti_tp_core_ops_t) -- */

struct tutti_chan_ep {
    tutti__chan_ep_t chan;
};

tutti_status_t tutti__chan_api_create(int rank, int size, uint32_t slots,
                                      size_t slot_size, const char *tp_name,
                                      tutti_chan_ep_t **ep_out)
{
    tutti_chan_ep_t *ep = malloc(sizeof(*ep));
    if (ep == NULL)
        return TUTTI_ERR_NO_MEMORY;
    tutti_status_t st = tutti__chan_ep_init(&ep->chan, rank, size, slots,
                                            slot_size, tp_name);
    if (st != TUTTI_OK) {
        free(ep);
        return st;
    }
    *ep_out = ep;
    return TUTTI_OK;
}

void tutti__chan_api_destroy(tutti_chan_ep_t *ep)
{
    if (ep == NULL)
        return;
    tutti__chan_ep_fini(&ep->chan);
    free(ep);
}

void tutti__chan_api_attach(tutti_chan_ep_t *ep, int peer, void *out,
                            void *in)
{
    if (peer < 0 || peer >= ep->chan.size || peer == ep->chan.rank)
        return;
    ep->chan.peers[peer].out = out;
    ep->chan.peers[peer].in = in;
}

tutti_status_t tutti__chan_api_send(tutti_chan_ep_t *ep, tutti_tp_op_t *op)
{
    return tutti__chan_send(&ep->chan, op);
}

tutti_status_t tutti__chan_api_recv(tutti_chan_ep_t *ep, tutti_tp_op_t *op)
{
    return tutti__chan_recv(&ep->chan, op);
}

int tutti__chan_api_progress(tutti_chan_ep_t *ep)
{
    return tutti__chan_progress(&ep->chan);
}

void tutti__chan_api_init(void *chan)
{
    tutti__chan_init(chan);
}

tutti_status_t tutti__chan_api_enable_single_copy(tutti_chan_ep_t *ep,
                                                  int peer, int peer_pid)
{
    return tutti__chan_enable_single_copy(&ep->chan, peer, peer_pid);
}

void tutti__chan_api_set_verify(tutti_chan_ep_t *ep, int verify)
{
    tutti__chan_set_verify(&ep->chan, verify);
}

void tutti__chan_api_attach_bell(tutti_chan_ep_t *ep, int rank, void *bell)
{
    tutti__chan_attach_bell(&ep->chan, rank, bell);
}

int tutti__chan_api_sleep(tutti_chan_ep_t *ep, double seconds)
{
    return tutti__chan_sleep(&ep->chan, seconds);
}

void tutti__chan_api_set_single_copy_range(tutti_chan_ep_t *ep, size_t min,
                                           size_t max)
{
    tutti__chan_set_single_copy_range(&ep->chan, min, max);
}

tutti_status_t tutti__chan_api_enable_mapped(tutti_chan_ep_t *ep, int peer,
                                             int peer_pid)
{
    return tutti__chan_enable_mapped(&ep->chan, peer, peer_pid);
}

void tutti__chan_api_set_mapped_min(tutti_chan_ep_t *ep, size_t min)
{
    tutti__chan_set_mapped_min(&ep->chan, min);
}
