// The engine is header-only today; this unit keeps the st_engine library non-empty.
#include "engine/event_queue.h"
#include "engine/rng.h"
