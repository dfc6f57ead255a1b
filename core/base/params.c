/* Defaults of the parameter structs the API fills (tutti.h): each call
 * sets size, so the library knows which fields a caller's build has. */
#include <string.h>

#include <tutti/tutti.h>

void tutti_context_params_init(tutti_context_params_t *params)
{
    if (params == NULL)
        return;
    memset(params, 0, sizeof(*params));
    params->size = sizeof(*params);
    params->task = -1;
    params->num_tasks = -1;
}

void tutti_store_init(tutti_store_t *store)
{
    if (store == NULL)
        return;
    memset(store, 0, sizeof(*store));
    store->size = sizeof(*store);
}

void tutti_group_params_init(tutti_group_params_t *params)
{
    if (params == NULL)
        return;
    memset(params, 0, sizeof(*params));
    params->size = sizeof(*params);
    params->group_size = 1;
    params->device_type = TUTTI_DEVICE_CPU;
}

void tutti_instance_params_init(tutti_instance_params_t *params)
{
    if (params == NULL)
        return;
    memset(params, 0, sizeof(*params));
    params->size = sizeof(*params);
    params->dtype = TUTTI_FLOAT32;
    params->op = TUTTI_OP_SUM;
    params->step = TUTTI_STEP_NEXT;
}
