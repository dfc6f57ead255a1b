/*
 * tutti.torch's backend: a c10d::Backend registered as "tutti" for
 * torch.distributed, thin over libtutti's C API.  Each process group is a
 * Tutti context met through the (prefixed) Store torch hands the backend,
 * with one group of every rank; each collective is one tutti_execute()
 * of an instance keyed by the call's parameters, waited for before the
 * call returns (a Work already complete, its future set).  send and recv
 * are tutti_isend() and tutti_irecv(), their Work pending until waited
 * for or tested (the waiting thread moves the data: no thread of the
 * backend's own).  CPU tensors, and CUDA tensors of collectives where
 * built with CUDA: a second Tutti group of CUDA members, each call
 * ordered on the tensor's current stream.
 */
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <pybind11/chrono.h>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <torch/extension.h>

#ifdef TUTTI_TORCH_CUDA
#include <c10/cuda/CUDAStream.h>
#endif

#include <tutti/tutti.h>

namespace {

/* ---- the Store as tutti_store_t -------------------------------------- */

struct StoreAdapter {
    c10::intrusive_ptr<c10d::Store> store;
    tutti_store_t c;
    std::string error;
};

int store_set(void *user, const char *key, const void *value, size_t len)
{
    auto *s = static_cast<StoreAdapter *>(user);
    try {
        const auto *p = static_cast<const uint8_t *>(value);
        s->store->set(key, std::vector<uint8_t>(p, p + len));
        return 0;
    } catch (const std::exception &e) {
        s->error = std::string("the Store's set('") + key + "'): " + e.what();
        return -1;
    }
}

/* Waits by polling check(): a Store's own wait throws at its timeout,
 * which cannot be told from a failure. */
int store_get(void *user, const char *key, void *buf, size_t cap,
              size_t *len_out, double timeout)
{
    auto *s = static_cast<StoreAdapter *>(user);
    auto deadline = std::chrono::steady_clock::now() +
                    std::chrono::duration<double>(timeout);
    auto pause = std::chrono::microseconds(200);
    try {
        while (!s->store->check({key})) {
            if (std::chrono::steady_clock::now() >= deadline)
                return 1;
            std::this_thread::sleep_for(pause);
            if (pause < std::chrono::milliseconds(10))
                pause *= 2;
        }
        std::vector<uint8_t> v = s->store->get(key);
        std::memcpy(buf, v.data(), std::min(cap, v.size()));
        *len_out = v.size();
        return 0;
    } catch (const std::exception &e) {
        s->error = std::string("the Store's get('") + key + "'): " + e.what();
        return -1;
    }
}

/* ---- a Work already complete ------------------------------------------ */

/* Its future is made when first asked for: most calls (every one that
 * is not async_op) never ask, and a future and its list cost more than
 * the rest of an 8-byte all_reduce's path through the backend. */
class DoneWork : public c10d::Work {
public:
    DoneWork(int rank, c10d::OpType op, std::vector<at::Tensor> outputs)
        : Work(rank, op), outputs_(std::move(outputs))
    {
    }
    bool isCompleted() override { return true; }
    bool isSuccess() const override { return true; }
    bool wait(std::chrono::milliseconds) override { return true; }
    std::vector<at::Tensor> result() override { return outputs_; }
    c10::intrusive_ptr<c10::ivalue::Future> getFuture() override
    {
        std::lock_guard<std::mutex> hold(mutex_);
        if (!future_) {
            future_ = c10::make_intrusive<c10::ivalue::Future>(
                c10::ListType::create(c10::TensorType::get()));
            future_->markCompleted(c10::IValue(outputs_));
        }
        return future_;
    }

private:
    std::vector<at::Tensor> outputs_;
    c10::intrusive_ptr<c10::ivalue::Future> future_;
};

/* ---- types ------------------------------------------------------------ */

tutti_dtype_t dtype_of(const at::Tensor &t, const char *call)
{
    switch (t.scalar_type()) {
    case at::kChar: return TUTTI_INT8;
    case at::kByte: return TUTTI_UINT8;
    case at::kBool: return TUTTI_UINT8;
    case at::kInt: return TUTTI_INT32;
    case at::kUInt32: return TUTTI_UINT32;
    case at::kLong: return TUTTI_INT64;
    case at::kUInt64: return TUTTI_UINT64;
    case at::kHalf: return TUTTI_FLOAT16;
    case at::kBFloat16: return TUTTI_BFLOAT16;
    case at::kFloat: return TUTTI_FLOAT32;
    case at::kDouble: return TUTTI_FLOAT64;
    default:
        TORCH_CHECK(false, "tutti: ", call, ": tensors of ", t.scalar_type(),
                    " are not supported (int8, uint8, bool, int32, uint32, "
                    "int64, uint64, float16, bfloat16, float32, float64)");
    }
}

uint64_t mix(uint64_t h, uint64_t v)
{
    h ^= v;
    return h * 0x100000001b3ULL;
}

uint64_t bits(double d)
{
    uint64_t u;
    std::memcpy(&u, &d, sizeof(u));
    return u;
}

/* ---- the backend -------------------------------------------------------- */

class TuttiBackend : public c10d::Backend {
public:
    TuttiBackend(const c10::intrusive_ptr<c10d::Store> &store, int rank,
                 int size, std::chrono::milliseconds timeout)
        : Backend(rank, size), timeout_(timeout.count() / 1000.0)
    {
        store_.store = store;
        tutti_store_init(&store_.c);
        store_.c.user = &store_;
        store_.c.set = store_set;
        store_.c.get = store_get;
        tutti_context_params_t cp;
        tutti_context_params_init(&cp);
        cp.task = rank;
        cp.num_tasks = size;
        cp.store = &store_.c;
        check(tutti_context_create(&cp, &ctx_), "init_process_group");
        tutti_group_params_t gp;
        tutti_group_params_init(&gp);
        gp.group_key = 1;
        gp.group_size = size;
        gp.timeout = timeout_;
        tutti_status_t st = tutti_group_join(ctx_, &gp, &group_);
        if (st != TUTTI_OK) {
            std::string why = message(st, "init_process_group");
            tutti_context_destroy(ctx_);
            ctx_ = nullptr;
            C10_THROW_ERROR(DistBackendError, why);
        }
    }

    ~TuttiBackend() override { shutdown(); }

    /* destroy_process_group's: leave and destroy the context now, so that
     * it says goodbye to the other tasks (a process that exits with the
     * backend still referenced would look killed to them). */
    void shutdown() override
    {
        std::lock_guard<std::mutex> hold(mu_);
        tutti_group_leave(cuda_group_);
        cuda_group_ = nullptr;
        tutti_group_leave(group_);
        group_ = nullptr;
        tutti_context_destroy(ctx_);
        ctx_ = nullptr;
    }

    /* Every pending and later call of every rank fails with
     * ERR_ABORTED naming this rank. */
    void abort() override
    {
        if (ctx_ != nullptr)
            tutti_abort(ctx_, ("torch abort() on rank " +
                               std::to_string(getRank())).c_str());
    }

    const std::string getBackendName() const override { return "tutti"; }

    c10::intrusive_ptr<c10d::Work> allreduce(
        std::vector<at::Tensor> &tensors,
        const c10d::AllreduceOptions &opts) override
    {
        at::Tensor &t = one(tensors, "all_reduce");
        tutti_instance_params_t p = params(TUTTI_COLL_ALLREDUCE, t,
                                           "all_reduce");
        reduce_op(opts.reduceOp, &p, "all_reduce");
        run(p, t, t.data_ptr(), t.data_ptr(), "all_reduce",
            opts.timeout);
        return done(c10d::OpType::ALLREDUCE, tensors);
    }

    c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
        std::vector<at::Tensor> &tensors,
        const c10d::AllreduceCoalescedOptions &opts) override
    {
        for (auto &t : tensors) {
            std::vector<at::Tensor> one_tensor{t};
            allreduce(one_tensor, opts);
        }
        return done(c10d::OpType::ALLREDUCE_COALESCED, tensors);
    }

    c10::intrusive_ptr<c10d::Work> broadcast(
        std::vector<at::Tensor> &tensors,
        const c10d::BroadcastOptions &opts) override
    {
        at::Tensor &t = one(tensors, "broadcast");
        tutti_instance_params_t p = params(TUTTI_COLL_BROADCAST, t,
                                           "broadcast");
        p.root = static_cast<int>(opts.rootRank);
        run(p, t, t.data_ptr(), t.data_ptr(), "broadcast",
            opts.timeout);
        return done(c10d::OpType::BROADCAST, tensors);
    }

    c10::intrusive_ptr<c10d::Work> reduce(
        std::vector<at::Tensor> &tensors,
        const c10d::ReduceOptions &opts) override
    {
        at::Tensor &t = one(tensors, "reduce");
        tutti_instance_params_t p = params(TUTTI_COLL_REDUCE, t, "reduce");
        p.root = static_cast<int>(opts.rootRank);
        reduce_op(opts.reduceOp, &p, "reduce");
        run(p, t, t.data_ptr(), t.data_ptr(), "reduce",
            opts.timeout);
        return done(c10d::OpType::REDUCE, tensors);
    }

    c10::intrusive_ptr<c10d::Work> all_gather_single(
        at::Tensor &out, at::Tensor &in,
        const c10d::AllgatherOptions &opts) override
    {
        const char *call = "all_gather_into_tensor";
        tutti_instance_params_t p = params(TUTTI_COLL_ALLGATHER, in, call);
        need(out, in, static_cast<size_t>(in.numel()) * getSize(), call);
        run(p, in, in.data_ptr(), out.data_ptr(), call,
            opts.timeout);
        std::vector<at::Tensor> outs{out};
        return done(c10d::OpType::_ALLGATHER_BASE, outs);
    }

    c10::intrusive_ptr<c10d::Work> _allgather_base(
        at::Tensor &out, at::Tensor &in,
        const c10d::AllgatherOptions &opts) override
    {
        return all_gather_single(out, in, opts);
    }

    c10::intrusive_ptr<c10d::Work> allgather(
        std::vector<std::vector<at::Tensor>> &outputs,
        std::vector<at::Tensor> &inputs,
        const c10d::AllgatherOptions &opts) override
    {
        at::Tensor &in = one(inputs, "all_gather");
        TORCH_CHECK(outputs.size() == 1 &&
                        outputs[0].size() == static_cast<size_t>(getSize()),
                    "tutti: all_gather: expected one list of ", getSize(),
                    " output tensors");
        at::Tensor flat = at::empty({getSize() * in.numel()}, in.options());
        all_gather_single(flat, in, opts);
        unflatten(flat, outputs[0]);
        return done(c10d::OpType::ALLGATHER, outputs[0]);
    }

    /* The coalesced forms: one call of the single form per tensor.
     * all_gather_coalesced's outputs are per rank, then per input
     * (outputs[r][i] gets rank r's inputs[i]), as gloo's are. */
    c10::intrusive_ptr<c10d::Work> allgather_coalesced(
        std::vector<std::vector<at::Tensor>> &outputs,
        std::vector<at::Tensor> &inputs,
        const c10d::AllgatherOptions &opts) override
    {
        TORCH_CHECK(outputs.size() == static_cast<size_t>(getSize()),
                    "tutti: all_gather_coalesced: ", outputs.size(),
                    " output lists; expected one per rank, ", getSize());
        for (auto &per_rank : outputs)
            TORCH_CHECK(per_rank.size() == inputs.size(), "tutti: "
                        "all_gather_coalesced: an output list of ",
                        per_rank.size(), " tensors; expected one per "
                        "input, ", inputs.size());
        std::vector<at::Tensor> all;
        for (size_t i = 0; i < inputs.size(); i++) {
            std::vector<std::vector<at::Tensor>> out(1);
            for (auto &per_rank : outputs)
                out[0].push_back(per_rank[i]);
            std::vector<at::Tensor> in{inputs[i]};
            allgather(out, in, opts);
        }
        for (auto &per_rank : outputs)
            all.insert(all.end(), per_rank.begin(), per_rank.end());
        return done(c10d::OpType::ALLGATHER_COALESCED, all);
    }

    c10::intrusive_ptr<c10d::Work> all_gather_single_coalesced(
        std::vector<at::Tensor> &outputs, std::vector<at::Tensor> &inputs,
        const c10d::AllgatherOptions &opts) override
    {
        TORCH_CHECK(outputs.size() == inputs.size(), "tutti: "
                    "all_gather_into_tensor (coalesced): ", inputs.size(),
                    " inputs and ", outputs.size(), " outputs");
        for (size_t i = 0; i < inputs.size(); i++)
            all_gather_single(outputs[i], inputs[i], opts);
        return done(c10d::OpType::ALLGATHER_INTO_TENSOR_COALESCED, outputs);
    }

    c10::intrusive_ptr<c10d::Work> reduce_scatter_single_coalesced(
        std::vector<at::Tensor> &outputs, std::vector<at::Tensor> &inputs,
        const c10d::ReduceScatterOptions &opts) override
    {
        TORCH_CHECK(outputs.size() == inputs.size(), "tutti: "
                    "reduce_scatter_tensor (coalesced): ", inputs.size(),
                    " inputs and ", outputs.size(), " outputs");
        for (size_t i = 0; i < inputs.size(); i++)
            reduce_scatter_single(outputs[i], inputs[i], opts);
        return done(c10d::OpType::REDUCE_SCATTER_TENSOR_COALESCED, outputs);
    }

    c10::intrusive_ptr<c10d::Work> gather(
        std::vector<std::vector<at::Tensor>> &outputs,
        std::vector<at::Tensor> &inputs,
        const c10d::GatherOptions &opts) override
    {
        at::Tensor &in = one(inputs, "gather");
        int root = static_cast<int>(opts.rootRank);
        tutti_instance_params_t p = params(TUTTI_COLL_GATHER, in, "gather");
        p.root = root;
        at::Tensor flat;
        if (getRank() == root) {
            TORCH_CHECK(outputs.size() == 1 &&
                            outputs[0].size() ==
                                static_cast<size_t>(getSize()),
                        "tutti: gather: expected one list of ", getSize(),
                        " output tensors at the root");
            flat = at::empty({getSize() * in.numel()}, in.options());
        }
        run(p, in, in.data_ptr(), flat.defined() ? flat.data_ptr() : nullptr,
            "gather", opts.timeout);
        std::vector<at::Tensor> outs;
        if (flat.defined()) {
            unflatten(flat, outputs[0]);
            outs = outputs[0];
        }
        return done(c10d::OpType::GATHER, outs);
    }

    c10::intrusive_ptr<c10d::Work> reduce_scatter_single(
        at::Tensor &out, at::Tensor &in,
        const c10d::ReduceScatterOptions &opts) override
    {
        const char *call = "reduce_scatter_tensor";
        TORCH_CHECK(in.numel() == out.numel() * getSize(),
                    "tutti: ", call, ": input has ", in.numel(),
                    " elements; expected ", out.numel() * getSize(),
                    " (the output's times the group size)");
        tutti_instance_params_t p = params(TUTTI_COLL_REDUCE_SCATTER, out,
                                           call);
        check_input(in, out, call);
        reduce_op(opts.reduceOp, &p, call);
        run(p, in, in.data_ptr(), out.data_ptr(), call,
            opts.timeout);
        std::vector<at::Tensor> outs{out};
        return done(c10d::OpType::_REDUCE_SCATTER_BASE, outs);
    }

    c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
        at::Tensor &out, at::Tensor &in,
        const c10d::ReduceScatterOptions &opts) override
    {
        return reduce_scatter_single(out, in, opts);
    }

    c10::intrusive_ptr<c10d::Work> reduce_scatter(
        std::vector<at::Tensor> &outputs,
        std::vector<std::vector<at::Tensor>> &inputs,
        const c10d::ReduceScatterOptions &opts) override
    {
        at::Tensor &out = one(outputs, "reduce_scatter");
        TORCH_CHECK(inputs.size() == 1 &&
                        inputs[0].size() == static_cast<size_t>(getSize()),
                    "tutti: reduce_scatter: expected one list of ",
                    getSize(), " input tensors");
        std::vector<at::Tensor> flat_in;
        for (auto &t : inputs[0])
            flat_in.push_back(t.reshape({-1}));
        at::Tensor in = at::cat(flat_in);
        at::Tensor flat_out = out.is_contiguous() ? out : out.contiguous();
        reduce_scatter_single(flat_out, in, opts);
        if (!flat_out.is_same(out))
            out.copy_(flat_out);
        return done(c10d::OpType::REDUCE_SCATTER, outputs);
    }

    c10::intrusive_ptr<c10d::Work> all_to_all_single(
        at::Tensor &out, at::Tensor &in, std::vector<int64_t> &out_splits,
        std::vector<int64_t> &in_splits,
        const c10d::AllToAllOptions &opts) override
    {
        const char *call = "all_to_all_single";
        tutti_instance_params_t p = params(TUTTI_COLL_ALLTOALL, in, call);
        check_input(in, out, call);
        std::vector<size_t> counts;
        int64_t row = in.dim() > 0 && in.size(0) > 0
                          ? in.numel() / in.size(0) : 1;
        if (in_splits.empty() && out_splits.empty()) {
            TORCH_CHECK(in.numel() % getSize() == 0 &&
                            out.numel() == in.numel(),
                        "tutti: ", call, ": input of ", in.numel(),
                        " elements does not split equally among ",
                        getSize(), " ranks into an output of ", out.numel());
            p.count = static_cast<size_t>(in.numel() / getSize());
        } else {
            TORCH_CHECK(in_splits.size() == static_cast<size_t>(getSize()),
                        "tutti: ", call, ": input_split_sizes has ",
                        in_splits.size(), " entries; the group has ",
                        getSize(), " ranks");
            for (int64_t s : in_splits)
                counts.push_back(static_cast<size_t>(s * row));
            int64_t want = 0;
            for (int64_t s : out_splits)
                want += s * row;
            TORCH_CHECK(out_splits.empty() || want == out.numel(), "tutti: ",
                        call, ": output_split_sizes add up to ", want,
                        " elements; the output holds ", out.numel());
            p.count = TUTTI_COUNT_PER_RANK;
            p.counts = counts.data();
            p.recv_capacity = static_cast<size_t>(out.numel());
        }
        run(p, in, in.data_ptr(), out.data_ptr(), call,
            opts.timeout);
        std::vector<at::Tensor> outs{out};
        return done(c10d::OpType::ALLTOALL_BASE, outs);
    }

    c10::intrusive_ptr<c10d::Work> alltoall_base(
        at::Tensor &out, at::Tensor &in, std::vector<int64_t> &out_splits,
        std::vector<int64_t> &in_splits,
        const c10d::AllToAllOptions &opts) override
    {
        return all_to_all_single(out, in, out_splits, in_splits, opts);
    }

    c10::intrusive_ptr<c10d::Work> alltoall(
        std::vector<at::Tensor> &outputs, std::vector<at::Tensor> &inputs,
        const c10d::AllToAllOptions &opts) override
    {
        TORCH_CHECK(inputs.size() == static_cast<size_t>(getSize()) &&
                        outputs.size() == inputs.size(),
                    "tutti: all_to_all: expected ", getSize(),
                    " input and output tensors");
        std::vector<at::Tensor> flat_in;
        std::vector<int64_t> in_splits, out_splits;
        int64_t total_out = 0;
        for (size_t r = 0; r < inputs.size(); r++) {
            flat_in.push_back(inputs[r].reshape({-1}));
            in_splits.push_back(inputs[r].numel());
            out_splits.push_back(outputs[r].numel());
            total_out += outputs[r].numel();
        }
        at::Tensor in = at::cat(flat_in);
        at::Tensor out = at::empty({total_out}, in.options());
        all_to_all_single(out, in, out_splits, in_splits, opts);
        unflatten(out, outputs);
        return done(c10d::OpType::ALLTOALL, outputs);
    }

    /* scatter as an alltoall with per-rank counts in which only the root
     * sends: one exchange, no data through the other ranks. */
    c10::intrusive_ptr<c10d::Work> scatter(
        std::vector<at::Tensor> &outputs,
        std::vector<std::vector<at::Tensor>> &inputs,
        const c10d::ScatterOptions &opts) override
    {
        at::Tensor &out = one(outputs, "scatter");
        int root = static_cast<int>(opts.rootRank);
        at::Tensor in = at::empty({0}, out.options());
        std::vector<int64_t> in_splits(getSize(), 0), out_splits;
        if (getRank() == root) {
            TORCH_CHECK(inputs.size() == 1 &&
                            inputs[0].size() ==
                                static_cast<size_t>(getSize()),
                        "tutti: scatter: expected one list of ", getSize(),
                        " input tensors at the root");
            std::vector<at::Tensor> flat;
            for (auto &t : inputs[0])
                flat.push_back(t.reshape({-1}));
            in = at::cat(flat);
            for (int r = 0; r < getSize(); r++)
                in_splits[r] = inputs[0][r].numel();
        }
        at::Tensor flat_out = at::empty({out.numel()}, out.options());
        all_to_all_single(flat_out, in, out_splits, in_splits,
                          c10d::AllToAllOptions{opts.timeout});
        out.copy_(flat_out.view_as(out));
        return done(c10d::OpType::SCATTER, outputs);
    }

    /* Point-to-point: tutti_isend and tutti_irecv under the group's
     * ranks (torch hands the backend group ranks) and torch's tag. */
    c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor> &tensors,
                                        int dst, int tag) override
    {
        return post(one(tensors, "send"), dst, tag, 0);
    }

    c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor> &tensors,
                                        int src, int tag) override
    {
        return post(one(tensors, "recv"), src, tag, 1);
    }

    c10::intrusive_ptr<c10d::Work> recvAnysource(
        std::vector<at::Tensor> &, int) override
    {
        TORCH_CHECK(false, "tutti: recv: rank ", getRank(), ": a receive "
                    "from any source (src=None) is not supported; name "
                    "the sender");
    }

    c10::intrusive_ptr<c10d::Work> barrier(
        const c10d::BarrierOptions &opts) override
    {
        at::Tensor t = at::zeros({1}, at::kByte);
        tutti_instance_params_t p = params(TUTTI_COLL_ALLREDUCE, t,
                                           "barrier");
        p.op = TUTTI_OP_MAX;
        run(p, t, t.data_ptr(), t.data_ptr(), "barrier",
            opts.timeout);
        std::vector<at::Tensor> none;
        return done(c10d::OpType::BARRIER, none);
    }

    /* What RequestWork needs: the lock, whether the group is still
     * there (its requests go with it), messages naming the rank. */
    std::mutex &lock() { return mu_; }
    bool live() const { return group_ != nullptr; }
    std::string message(tutti_status_t st, const char *call) const
    {
        std::string m = std::string("tutti: ") + call + ": rank " +
                        std::to_string(getRank()) + ": " +
                        tutti_status_name(st) + ": " + tutti_last_error();
        if (!store_.error.empty())
            m += " (" + store_.error + ")";
        return m;
    }

private:
    StoreAdapter store_;
    double timeout_;
    tutti_context_t *ctx_ = nullptr;
    tutti_group_t *group_ = nullptr;
    tutti_group_t *cuda_group_ = nullptr; /* made at the first CUDA call */
    int cuda_device_ = -1;
    /* One thread drives a group member at a time (tutti.h); torch may
     * call from several (DDP's reducer from autograd's). */
    std::mutex mu_;

    void check(tutti_status_t st, const char *call) const
    {
        if (st != TUTTI_OK)
            C10_THROW_ERROR(DistBackendError, message(st, call));
    }

    at::Tensor &one(std::vector<at::Tensor> &tensors, const char *call)
    {
        TORCH_CHECK(tensors.size() == 1, "tutti: ", call, ": expected one "
                    "tensor per process, got ", tensors.size());
        at::Tensor &t = tensors[0];
        device_ok(t, call);
        TORCH_CHECK(t.is_contiguous(), "tutti: ", call, ": the tensor is "
                    "not contiguous");
        return t;
    }

    /* CPU tensors, and CUDA tensors where the backend was built with
     * CUDA (tutti's CUDA group: NCCL's module, or the staged path). */
    void device_ok(const at::Tensor &t, const char *call) const
    {
#ifdef TUTTI_TORCH_CUDA
        TORCH_CHECK(t.device().is_cpu() || t.device().is_cuda(), "tutti: ",
                    call, ": rank ", getRank(), ": the tensor is on ",
                    t.device(), "; this backend takes CPU and CUDA tensors");
#else
        TORCH_CHECK(t.device().is_cpu(), "tutti: ", call, ": rank ",
                    getRank(), ": the tensor is on ", t.device(), "; this "
                    "build of tutti.torch takes CPU tensors (it was built "
                    "where torch had no CUDA, or without CUDA's headers)");
#endif
    }

    /* @p flat's elements, in order, into the tensors of @p outs (what
     * the list forms of the collectives hand the caller). */
    static void unflatten(const at::Tensor &flat,
                          std::vector<at::Tensor> &outs)
    {
        int64_t at = 0;
        for (auto &o : outs) {
            o.copy_(flat.narrow(0, at, o.numel()).view_as(o));
            at += o.numel();
        }
    }

    void check_input(const at::Tensor &in, const at::Tensor &out,
                     const char *call)
    {
        device_ok(in, call);
        TORCH_CHECK(in.device() == out.device(), "tutti: ", call,
                    ": input on ", in.device(), ", output on ",
                    out.device());
        TORCH_CHECK(in.is_contiguous() && out.is_contiguous(), "tutti: ",
                    call, ": tensors must be contiguous");
        TORCH_CHECK(in.scalar_type() == out.scalar_type(), "tutti: ", call,
                    ": input is ", in.scalar_type(), ", output ",
                    out.scalar_type());
    }

    void need(const at::Tensor &out, const at::Tensor &in, size_t n,
              const char *call)
    {
        check_input(in, out, call);
        TORCH_CHECK(static_cast<size_t>(out.numel()) == n, "tutti: ", call,
                    ": output has ", out.numel(), " elements; expected ", n);
    }

    tutti_instance_params_t params(tutti_collective_t coll,
                                   const at::Tensor &t, const char *call)
    {
        tutti_instance_params_t p;
        tutti_instance_params_init(&p);
        p.collective = coll;
        p.dtype = dtype_of(t, call);
        p.count = static_cast<size_t>(t.numel());
        return p;
    }

    void reduce_op(const c10d::ReduceOp &op, tutti_instance_params_t *p,
                   const char *call)
    {
        switch (static_cast<c10d::ReduceOp::RedOpType>(op)) {
        case c10d::ReduceOp::SUM: p->op = TUTTI_OP_SUM; break;
        case c10d::ReduceOp::AVG: p->op = TUTTI_OP_AVG; break;
        case c10d::ReduceOp::PRODUCT: p->op = TUTTI_OP_PROD; break;
        case c10d::ReduceOp::MIN: p->op = TUTTI_OP_MIN; break;
        case c10d::ReduceOp::MAX: p->op = TUTTI_OP_MAX; break;
        case c10d::ReduceOp::PREMUL_SUM: {
            p->op = TUTTI_OP_SUM;
            auto *s = dynamic_cast<c10d::PreMulSumSupplement *>(
                op.supplement_.get());
            TORCH_CHECK(s != nullptr, "tutti: ", call, ": PREMUL_SUM "
                        "without its factor");
            p->pre_scale = s->tensor_factor.defined()
                               ? s->tensor_factor.item<double>()
                               : s->double_factor;
            break;
        }
        default:
            TORCH_CHECK(false, "tutti: ", call, ": ReduceOp ",
                        static_cast<int>(
                            static_cast<c10d::ReduceOp::RedOpType>(op)),
                        " (bitwise) is not supported: sum, avg, product, "
                        "min, max, premul_sum");
        }
    }

    /* Execute @p p on the group and wait: the instance key hashes every
     * parameter an instance fixes, the same on every rank. */
    /* The group @p t's device runs in: the cpu group, or the CUDA group
     * of its GPU, joined by every rank at its first CUDA call (a
     * collective, so every rank makes it); its stream the current one. */
    tutti_group_t *group_for(const at::Tensor &t, tutti_instance_params_t &p,
                             const char *call)
    {
        TORCH_CHECK(group_ != nullptr, "tutti: ", call, ": rank ",
                    getRank(), ": the process group was shut down");
        if (!t.device().is_cuda())
            return group_;
#ifdef TUTTI_TORCH_CUDA
        int dev = t.device().index();
        if (cuda_group_ == nullptr) {
            tutti_group_params_t gp;
            tutti_group_params_init(&gp);
            gp.group_key = 2;
            gp.group_size = getSize();
            gp.device_type = TUTTI_DEVICE_CUDA;
            gp.device_index = dev;
            gp.timeout = timeout_;
            check(tutti_group_join(ctx_, &gp, &cuda_group_), call);
            cuda_device_ = dev;
        }
        TORCH_CHECK(dev == cuda_device_, "tutti: ", call, ": rank ",
                    getRank(), ": a tensor on cuda:", dev, "; this rank's "
                    "CUDA member is cuda:", cuda_device_, " (one GPU per "
                    "rank)");
        p.stream = c10::cuda::getCurrentCUDAStream(dev).stream();
        return cuda_group_;
#else
        return group_;
#endif
    }

    void run(tutti_instance_params_t &p, const at::Tensor &t,
             const void *send, void *recv, const char *call,
             std::chrono::milliseconds timeout)
    {
        uint64_t h = 0xcbf29ce484222325ULL;
        h = mix(h, 0x746f7263);
        h = mix(h, p.collective);
        h = mix(h, p.dtype);
        h = mix(h, p.count);
        h = mix(h, p.op);
        h = mix(h, static_cast<uint64_t>(static_cast<unsigned>(p.root)));
        h = mix(h, bits(p.pre_scale));
        p.instance_key = h & ~(1ULL << 63);
        if (timeout.count() > 0)
            p.timeout = timeout.count() / 1000.0;
        tutti_request_t *r = nullptr;
        std::lock_guard<std::mutex> hold(mu_);
        tutti_group_t *g = group_for(t, p, call);
        check(tutti_execute(g, &p, send, recv, &r), call);
        tutti_status_t st = tutti_request_wait(r);
        std::string why = st == TUTTI_OK ? "" : message(st, call);
        tutti_request_free(r);
        if (st != TUTTI_OK)
            C10_THROW_ERROR(DistBackendError, why);
    }

    c10::intrusive_ptr<c10d::Work> done(c10d::OpType op,
                                        std::vector<at::Tensor> &outs)
    {
        return c10::make_intrusive<DoneWork>(getRank(), op, outs);
    }

    c10::intrusive_ptr<c10d::Work> post(at::Tensor &t, int peer, int tag,
                                        int is_recv);
};

/* ---- a Work over a pending request ----------------------------------- */

/* send's and recv's: the request progresses in wait() and isCompleted()
 * (under the backend's lock, in slices, so other threads may call in
 * between).  Its future is made when first asked for (as DoneWork's),
 * and completes when either sees the request done. */
class RequestWork : public c10d::Work {
public:
    RequestWork(c10::intrusive_ptr<TuttiBackend> owner, tutti_request_t *r,
                c10d::OpType op, std::vector<at::Tensor> tensors,
                const char *call)
        : Work(owner->getRank(), op), owner_(std::move(owner)), request_(r),
          tensors_(std::move(tensors)), call_(call)
    {
    }

    /* A Work dropped while its message is in flight: the request stays
     * with the group (freed when it is left) rather than freed in
     * flight. */
    ~RequestWork() override
    {
        std::lock_guard<std::mutex> hold(owner_->lock());
        if (!done_ && owner_->live() &&
            tutti_request_test(request_) != TUTTI_INPROGRESS)
            tutti_request_free(request_);
    }

    bool isCompleted() override { return advance(0); }
    bool isSuccess() const override { return done_ && error_ == nullptr; }
    std::exception_ptr exception() const override { return error_; }
    std::vector<at::Tensor> result() override { return tensors_; }
    c10::intrusive_ptr<c10::ivalue::Future> getFuture() override
    {
        std::lock_guard<std::mutex> hold(owner_->lock());
        if (!future_) {
            future_ = c10::make_intrusive<c10::ivalue::Future>(
                c10::ListType::create(c10::TensorType::get()));
            if (done_)
                finish_future();
        }
        return future_;
    }

    /* Slices of 50 ms under the lock; the group's time limit ends a
     * message that never comes (TUTTI_ERR_TIMEOUT, naming the peer),
     * @p timeout (if not kNoTimeout) one the caller will not wait for
     * any longer. */
    bool wait(std::chrono::milliseconds timeout) override
    {
        auto start = std::chrono::steady_clock::now();
        while (!advance(0.05)) {
            if (timeout == kNoTimeout ||
                std::chrono::steady_clock::now() - start < timeout)
                continue;
            C10_THROW_ERROR(DistBackendError,
                            std::string("tutti: ") + call_ + ": rank " +
                                std::to_string(owner_->getRank()) +
                                ": not complete within " +
                                std::to_string(timeout.count()) + " ms");
        }
        if (error_ != nullptr)
            std::rethrow_exception(error_);
        return true;
    }

private:
    c10::intrusive_ptr<TuttiBackend> owner_;
    tutti_request_t *request_;
    std::vector<at::Tensor> tensors_;
    const char *call_;
    bool done_ = false;
    std::exception_ptr error_;
    c10::intrusive_ptr<c10::ivalue::Future> future_;

    /* Waits up to @p seconds (0: a test) for the request; whether it
     * ended. */
    bool advance(double seconds)
    {
        std::lock_guard<std::mutex> hold(owner_->lock());
        if (done_)
            return true;
        if (!owner_->live()) {
            fail(std::string("tutti: ") + call_ + ": rank " +
                 std::to_string(owner_->getRank()) + ": the process group "
                 "was shut down before it completed");
            return true;
        }
        tutti_status_t st = seconds > 0
                                ? tutti_request_wait_for(request_, seconds)
                                : tutti_request_test(request_);
        if (st != TUTTI_INPROGRESS)
            settle(st);
        return done_;
    }

    /* The request ended with @p st (the backend's lock held). */
    void settle(tutti_status_t st)
    {
        done_ = true;
        if (st == TUTTI_OK) {
            tutti_request_free(request_);
            finish_future();
            return;
        }
        std::string why = owner_->message(st, call_);
        tutti_request_free(request_);
        fail(why);
    }

    void fail(const std::string &why)
    {
        done_ = true;
        try {
            C10_THROW_ERROR(DistBackendError, why);
        } catch (...) {
            error_ = std::current_exception();
        }
        finish_future();
    }

    /* The request ended: the future, if one was asked for, says how. */
    void finish_future()
    {
        if (!future_)
            return;
        if (error_ != nullptr)
            future_->setError(error_);
        else
            future_->markCompleted(c10::IValue(tensors_));
    }
};

/* Point-to-point: tutti_isend or tutti_irecv, a RequestWork over it. */
c10::intrusive_ptr<c10d::Work> TuttiBackend::post(at::Tensor &t, int peer,
                                              int tag, int is_recv)
{
    const char *call = is_recv ? "recv" : "send";
    TORCH_CHECK(t.device().is_cpu(), "tutti: ", call, ": rank ",
                getRank(), ": the tensor is on ", t.device(), "; "
                "point-to-point takes CPU tensors (Tutti's CUDA groups "
                "run collectives only)");
    TORCH_CHECK(tag >= 0, "tutti: ", call, ": rank ", getRank(),
                ": tag ", tag, ": expected a tag >= 0");
    tutti_dtype_t dt = dtype_of(t, call);
    size_t n = static_cast<size_t>(t.numel());
    tutti_request_t *r = nullptr;
    std::lock_guard<std::mutex> hold(mu_);
    TORCH_CHECK(group_ != nullptr, "tutti: ", call, ": rank ",
                getRank(), ": the process group was shut down");
    auto t32 = static_cast<uint32_t>(tag);
    check(is_recv ? tutti_irecv(group_, t.data_ptr(), n, dt, peer, t32,
                                &r)
                  : tutti_isend(group_, t.data_ptr(), n, dt, peer, t32,
                                &r),
          call);
    return c10::make_intrusive<RequestWork>(
        c10::intrusive_ptr<TuttiBackend>::reclaim_copy(this), r,
        is_recv ? c10d::OpType::RECV : c10d::OpType::SEND,
        std::vector<at::Tensor>{t}, call);
}

c10::intrusive_ptr<c10d::Backend> create_backend(
    const c10::intrusive_ptr<c10d::Store> &store, int64_t rank,
    int64_t size, const std::chrono::duration<float> &timeout)
{
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(timeout);
    return c10::make_intrusive<TuttiBackend>(store, static_cast<int>(rank),
                                             static_cast<int>(size), ms);
}

} // namespace

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
    m.doc() = "tutti.torch's c10d backend over libtutti";
    m.def("create_backend", &create_backend,
          "create_backend(store, rank, size, timeout): the backend of one "
          "process group, met through store",
          py::call_guard<py::gil_scoped_release>());
}
