#include "trace/trace-hw_gmem_accel.h"
