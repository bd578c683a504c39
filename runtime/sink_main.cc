#include "runtime/process.h"

int main(int argc, char** argv) { return sluice::process_main(sluice::Role::kSink, argc, argv); }
