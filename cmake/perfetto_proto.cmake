# The Perfetto trace format (proto/perfetto_trace_subset.proto), compiled by protoc into
# st_metrics for the --trace writer (src/metrics/trace_perfetto.cpp). Debian 12 packages:
# protobuf-compiler, libprotobuf-dev (scripts/install-deps.sh). The generated header is
# build/generated/proto/perfetto_trace_subset.pb.h ("proto/..." on every layer's include path).
find_package(Protobuf 3.12 REQUIRED)
protobuf_generate(
  TARGET st_metrics
  LANGUAGE cpp
  PROTOS ${CMAKE_CURRENT_SOURCE_DIR}/proto/perfetto_trace_subset.proto
  PROTOC_OUT_DIR ${CMAKE_CURRENT_BINARY_DIR}/generated
  OUT_VAR perfetto_proto_srcs)
# Generated code is not ours to warn about (-Werror in CI).
set_source_files_properties(${perfetto_proto_srcs} PROPERTIES COMPILE_OPTIONS "-w")
target_link_libraries(st_metrics PUBLIC protobuf::libprotobuf-lite)
