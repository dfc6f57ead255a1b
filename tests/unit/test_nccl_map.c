/*
 * The NCCL module's pure mappings (algorithms/nccl/nccl_map.c, compiled
 * into this program alone): every data type and op to NCCL's enum, values
 * refused, and the checks supports() makes before it asks CUDA anything.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "nccl_map.h"

static void test_dtypes_map(void **state)
{
    static const struct {
        tutti_dtype_t ours;
        ncclDataType_t nccl;
    } map[] = {
        {TUTTI_INT8, ncclInt8},       {TUTTI_UINT8, ncclUint8},
        {TUTTI_INT32, ncclInt32},     {TUTTI_UINT32, ncclUint32},
        {TUTTI_INT64, ncclInt64},     {TUTTI_UINT64, ncclUint64},
        {TUTTI_FLOAT16, ncclFloat16}, {TUTTI_BFLOAT16, ncclBfloat16},
        {TUTTI_FLOAT32, ncclFloat32}, {TUTTI_FLOAT64, ncclFloat64},
    };
    (void)state;
    assert_int_equal(sizeof(map) / sizeof(map[0]), TUTTI_DTYPE_COUNT);
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        ncclDataType_t t = ncclNumTypes;
        assert_int_equal(tutti_alg_nccl_map_dtype(map[i].ours, &t), 1);
        assert_int_equal(t, map[i].nccl);
    }
    /* NCCL's own values, so a renumbering of either side shows. */
    ncclDataType_t t = ncclNumTypes;
    assert_int_equal(tutti_alg_nccl_map_dtype(TUTTI_BFLOAT16, &t), 1);
    assert_int_equal((int)t, 9);
    assert_int_equal(tutti_alg_nccl_map_dtype(TUTTI_FLOAT64, &t), 1);
    assert_int_equal((int)t, 8);
}

static void test_unknown_dtype_refused(void **state)
{
    ncclDataType_t t = ncclNumTypes;
    (void)state;
    assert_int_equal(tutti_alg_nccl_map_dtype(TUTTI_DTYPE_COUNT, &t), 0);
    assert_int_equal(tutti_alg_nccl_map_dtype((tutti_dtype_t)-1, &t), 0);
    assert_int_equal(t, ncclNumTypes); /* untouched */
}

static void test_ops_map(void **state)
{
    ncclRedOp_t o = ncclNumOps;
    (void)state;
    assert_int_equal(tutti_alg_nccl_map_op(TUTTI_OP_SUM, &o), 1);
    assert_int_equal(o, ncclSum);
    assert_int_equal((int)o, 0);
    assert_int_equal(tutti_alg_nccl_map_op(TUTTI_OP_PROD, &o), 1);
    assert_int_equal((int)o, 1);
    assert_int_equal(tutti_alg_nccl_map_op(TUTTI_OP_MIN, &o), 1);
    assert_int_equal(o, ncclMin);
    assert_int_equal((int)o, 3);
    assert_int_equal(tutti_alg_nccl_map_op(TUTTI_OP_MAX, &o), 1);
    assert_int_equal(o, ncclMax);
    assert_int_equal((int)o, 2);
}

static void test_avg_and_unknown_ops_refused(void **state)
{
    ncclRedOp_t o = ncclNumOps;
    (void)state;
    /* The core applies avg as sum and divides: ncclAvg would divide
     * again. */
    assert_int_equal(tutti_alg_nccl_map_op(TUTTI_OP_AVG, &o), 0);
    assert_int_equal(tutti_alg_nccl_map_op(TUTTI_OP_COUNT, &o), 0);
    assert_int_equal(tutti_alg_nccl_map_op((tutti_op_t)77, &o), 0);
    assert_int_equal(o, ncclNumOps);
}

static const tutti_locality_t two_hosts[4] = {
    {0, 0, 0, 0}, {0, 1, 0, 0}, {1, 0, 1, 0}, {1, 1, 1, 0}};

/* An allreduce of float32 sums on CUDA, over @p n ranks. */
static tutti_alg_instance_t cuda_instance(int n, const char *const *ids,
                                          const tutti_locality_t *loc)
{
    tutti_alg_instance_t in;
    memset(&in, 0, sizeof(in));
    in.size = sizeof(in);
    in.collective = TUTTI_COLL_ALLREDUCE;
    in.dtype = TUTTI_FLOAT32;
    in.op = TUTTI_OP_SUM;
    in.count = 1024;
    in.group_size = n;
    in.num_tasks = 2;
    in.device_type = TUTTI_DEVICE_CUDA;
    in.localities = loc;
    in.pci_bus_ids = ids;
    return in;
}

static void test_distinct_gpus_pass(void **state)
{
    /* The same bus id on two hosts is two GPUs. */
    static const char *const ids[] = {"0000:3b:00.0", "0000:5e:00.0",
                                      "0000:3b:00.0", "0000:5e:00.0"};
    char why[256] = "untouched";
    (void)state;
    tutti_alg_instance_t in = cuda_instance(4, ids, two_hosts);
    assert_int_equal(tutti_alg_nccl_check(&in, why, sizeof(why)), 1);
    assert_string_equal(why, "untouched");
    /* Before the group is known (no localities, no ids) nothing is
     * refused for it. */
    in = cuda_instance(4, NULL, NULL);
    assert_int_equal(tutti_alg_nccl_check(&in, why, sizeof(why)), 1);
}

static void test_shared_gpu_refused(void **state)
{
    static const char *const ids[] = {"0000:3b:00.0", "0000:5e:00.0",
                                      "0000:af:00.0", "0000:af:00.0"};
    char why[256] = "";
    (void)state;
    tutti_alg_instance_t in = cuda_instance(4, ids, two_hosts);
    assert_int_equal(tutti_alg_nccl_check(&in, why, sizeof(why)), 0);
    assert_string_equal(why, "ranks 2 and 3 share GPU 0000:af:00.0 on host "
                             "1: NCCL needs one GPU per rank");
}

static void test_cpu_members_not_a_shared_gpu(void **state)
{
    /* Empty ids (cpu members) on one host share nothing. */
    static const char *const ids[] = {"", "", "0000:3b:00.0",
                                      "0000:5e:00.0"};
    static const tutti_locality_t one_host[4] = {
        {0, 0, 0, 0}, {0, 1, 0, 0}, {1, 0, 0, 0}, {1, 1, 0, 0}};
    char why[256] = "";
    (void)state;
    assert_int_equal(tutti_alg_nccl_check_gpus(4, one_host, ids, why,
                                               sizeof(why)), 1);
    static const char *const same[] = {"", "0000:3b:00.0", "",
                                       "0000:3b:00.0"};
    assert_int_equal(tutti_alg_nccl_check_gpus(4, one_host, same, why,
                                               sizeof(why)), 0);
    assert_string_equal(why, "ranks 1 and 3 share GPU 0000:3b:00.0 on host "
                             "0: NCCL needs one GPU per rank");
}

static void test_check_refusals(void **state)
{
    char why[256];
    tutti_alg_instance_t in;
    (void)state;

    in = cuda_instance(2, NULL, NULL);
    in.device_type = TUTTI_DEVICE_CPU;
    assert_int_equal(tutti_alg_nccl_check(&in, why, sizeof(why)), 0);
    assert_string_equal(why, "device type cpu: NCCL runs on cuda devices "
                             "only");

    in = cuda_instance(2, NULL, NULL);
    in.dtype = TUTTI_DTYPE_COUNT;
    assert_int_equal(tutti_alg_nccl_check(&in, why, sizeof(why)), 0);
    assert_string_equal(why, "data type 10: not one NCCL knows");

    in = cuda_instance(2, NULL, NULL);
    in.op = (tutti_op_t)42;
    assert_int_equal(tutti_alg_nccl_check(&in, why, sizeof(why)), 0);
    assert_string_equal(why, "op 42: not one NCCL knows");

    /* avg reaches the implementation as sum; a collective that does not
     * reduce ignores the op. */
    in = cuda_instance(2, NULL, NULL);
    in.op = TUTTI_OP_AVG;
    assert_int_equal(tutti_alg_nccl_check(&in, why, sizeof(why)), 1);
    in.collective = TUTTI_COLL_BROADCAST;
    in.op = (tutti_op_t)42;
    assert_int_equal(tutti_alg_nccl_check(&in, why, sizeof(why)), 1);

    in = cuda_instance(2, NULL, NULL);
    in.collective = TUTTI_COLL_ALLGATHER;
    in.count = TUTTI_COUNT_PER_RANK;
    assert_int_equal(tutti_alg_nccl_check(&in, why, sizeof(why)), 0);
    assert_string_equal(why, "allgather with per-rank counts: its output "
                             "sizes are known only after an exchange, which "
                             "cannot be ordered on the caller's stream");
    in.collective = TUTTI_COLL_ALLTOALL;
    assert_int_equal(tutti_alg_nccl_check(&in, why, sizeof(why)), 0);
    assert_non_null(strstr(why, "alltoall with per-rank counts"));
    in.collective = TUTTI_COLL_REDUCE_SCATTER;
    assert_int_equal(tutti_alg_nccl_check(&in, why, sizeof(why)), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dtypes_map),
        cmocka_unit_test(test_unknown_dtype_refused),
        cmocka_unit_test(test_ops_map),
        cmocka_unit_test(test_avg_and_unknown_ops_refused),
        cmocka_unit_test(test_distinct_gpus_pass),
        cmocka_unit_test(test_shared_gpu_refused),
        cmocka_unit_test(test_cpu_members_not_a_shared_gpu),
        cmocka_unit_test(test_check_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
