/* SCAFFOLD: replaced by the module's own implementation (see the issues). */
#include "internal.h"
