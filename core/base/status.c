/* Status names and messages, generated from TUTTI_STATUS_LIST. */
#include <tutti/tutti.h>

const char *tutti_status_name(tutti_status_t status)
{
    switch (status) {
#define TUTTI_STATUS_NAME_(name, value, text)                                  \
    case TUTTI_##name:                                                         \
        return #name;
        TUTTI_STATUS_LIST(TUTTI_STATUS_NAME_)
#undef TUTTI_STATUS_NAME_
    }
    return "UNKNOWN_STATUS";
}

const char *tutti_strerror(tutti_status_t status)
{
    switch (status) {
#define TUTTI_STATUS_TEXT_(name, value, text)                                  \
    case TUTTI_##name:                                                         \
        return text;
        TUTTI_STATUS_LIST(TUTTI_STATUS_TEXT_)
#undef TUTTI_STATUS_TEXT_
    }
    return "unknown status";
}
