# Copies one of etcd's .proto files (Debian's golang-etcd-server-dev) to OUT
# without the Go- and gateway-only annotations, so protoc can compile it for
# C++ with nothing but libprotobuf's own descriptor.proto:
#   - import "gogoproto/gogo.proto" and every `option (gogoproto.X) = ...;`
#     (gogo's Go code-generation hints: marshaler_all, sizer_all, ...);
#   - import "google/api/annotations.proto" and every
#     `option (google.api.http) = { post: "/v3/..." body: "*" ... };` block
#     (routes of etcd's JSON gateway).
# Neither changes a message, a field number or a service: the wire format
# and the gRPC method names are exactly etcd's.
#   cmake -DIN=<etcd .proto> -DOUT=<copy> -P strip_etcd_proto.cmake
file(READ "${IN}" text)
string(REGEX REPLACE "import \"gogoproto/gogo.proto\";" "" text "${text}")
string(REGEX REPLACE "import \"google/api/annotations.proto\";" "" text "${text}")
string(REGEX REPLACE "option \\(gogoproto\\.[a-z_]+\\) = [a-z]+;" "" text "${text}")
# One level of nested braces: some blocks carry `additional_bindings { ... }`.
string(REGEX REPLACE "option \\(google\\.api\\.http\\) = {([^{}]|{[^{}]*})*};" "" text "${text}")
if(text MATCHES "gogoproto|google\\.api")
  message(FATAL_ERROR "strip_etcd_proto: ${IN} still mentions gogoproto or google.api after stripping")
endif()
file(WRITE "${OUT}.tmp" "${text}")
file(COPY_FILE "${OUT}.tmp" "${OUT}" ONLY_IF_DIFFERENT)
file(REMOVE "${OUT}.tmp")
