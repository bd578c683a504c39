#include "node/metrics.h"
