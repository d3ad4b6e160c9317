#include "csmith.h"
int8_t g_20;
int32_t func_31() { g_20 = g_20--; }
