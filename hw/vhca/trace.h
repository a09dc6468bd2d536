#include "trace/trace-hw_vhca.h"
