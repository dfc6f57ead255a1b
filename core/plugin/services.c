/*
 * What both services tables share (services.h): a module's error is
 * recorded and logged as the core's own are, under the subsystem the
 * module names; its log lines obey the core's level.
 */
#include "base/log.h"
#include "plugin/services.h"

void tutti__module_vlog(int level, const char *subsys, const char *fmt,
                        va_list ap)
{
    if (level <= tutti__log_level)
        tutti__log_vwrite(level, subsys, fmt, ap);
}
