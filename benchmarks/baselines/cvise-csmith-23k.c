#include "csmith.h"
int32_t g_50;
int8_t func_47() { g_50 = g_50--; }
