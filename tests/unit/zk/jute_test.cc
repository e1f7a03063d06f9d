// The jute primitives and records: byte layouts written out by hand from
// ZooKeeper's zookeeper.jute (big-endian, -1 for null), and every way a
// reader must refuse bytes (docs/zookeeper-compat.md, "Wire").
#include "zk/jute.h"

#include <gtest/gtest.h>

#include <string>

#include "zk/records.h"

namespace tenure::zk {
namespace {

std::string Hex(std::string_view bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (const char c : bytes) {
    const auto b = static_cast<unsigned char>(c);
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

std::string Unhex(std::string_view hex) {
  std::string out;
  for (std::size_t i = 0; i + 1 < hex.size(); i += 2) {
    out.push_back(static_cast<char>(std::stoi(std::string(hex.substr(i, 2)), nullptr, 16)));
  }
  return out;
}

TEST(JuteTest, PrimitivesAreBigEndian) {
  std::string out;
  JuteWriter w(&out);
  w.Int("i", -2);
  w.Long("l", 0x0102030405060708);
  w.Bool("b", true);
  w.Buffer("buf", "ab");
  EXPECT_EQ(Hex(out),
            "fffffffe"
            "0102030405060708"
            "01"
            "00000002"
            "6162");
}

TEST(JuteTest, StatIsSixtyEightBytesInItsOrder) {
  Stat stat{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  const std::string bytes = EncodeRecord(stat);
  EXPECT_EQ(bytes.size(), 68u);
  EXPECT_EQ(Hex(bytes),
            "0000000000000001"
            "0000000000000002"
            "0000000000000003"
            "0000000000000004"
            "00000005"
            "00000006"
            "00000007"
            "0000000000000008"
            "00000009"
            "0000000a"
            "000000000000000b");
  EXPECT_EQ(DecodeRecord<Stat>(bytes), stat);
}

// kazoo's and the Java client's first frame for a new session, readOnly
// false, a 10 s timeout: what a server reads before anything else.
TEST(JuteTest, ConnectRequestWithAndWithoutReadOnly) {
  const std::string with_flag = Unhex(
      "00000000"
      "0000000000000000"
      "00002710"
      "0000000000000000"
      "00000010"
      "00000000000000000000000000000000"
      "00");
  std::optional<ConnectRequest> request = DecodeRecord<ConnectRequest>(with_flag);
  ASSERT_TRUE(request.has_value());
  EXPECT_EQ(request->timeout_ms, 10000);
  EXPECT_EQ(request->password, std::string(16, '\0'));
  EXPECT_EQ(request->read_only, false);
  EXPECT_EQ(EncodeRecord(*request), with_flag);

  // An old client stops after the password: no readOnly, and none written back.
  const std::string without = with_flag.substr(0, with_flag.size() - 1);
  request = DecodeRecord<ConnectRequest>(without);
  ASSERT_TRUE(request.has_value());
  EXPECT_FALSE(request->read_only.has_value());
  EXPECT_EQ(EncodeRecord(*request), without);
}

TEST(JuteTest, NullBuffersAndVectorsReadAsEmpty) {
  // CreateRequest with data null (-1) and acl null (-1).
  const std::string bytes = Unhex(
      "00000002"
      "2f61"
      "ffffffff"
      "ffffffff"
      "00000000");
  JuteReader reader(bytes);
  CreateRequest create;
  reader.String("path", create.path);
  reader.Buffer("data", create.data);
  EXPECT_TRUE(reader.was_null());
  reader.Records("acl", create.acl);
  EXPECT_TRUE(reader.was_null());
  reader.Int("flags", create.flags);
  EXPECT_FALSE(reader.failed()) << reader.error();
  EXPECT_EQ(create.path, "/a");
  EXPECT_TRUE(create.data.empty());
  EXPECT_TRUE(create.acl.empty());
}

// ZooKeeper's generated code loops over a vector's count, so any negative
// count is an empty vector; a negative length other than -1 is refused
// (its checkLength).
TEST(JuteTest, ANegativeCountIsAnEmptyVector) {
  std::string error;
  std::optional<ChildrenResponse> children = DecodeRecord<ChildrenResponse>(Unhex("fffffffe"));
  ASSERT_TRUE(children.has_value());
  EXPECT_TRUE(children->children.empty());
  const std::string count = Unhex("80000000");
  JuteReader reader(count);
  std::vector<Acl> acl;
  reader.Records("acl", acl);
  EXPECT_FALSE(reader.failed());
  EXPECT_TRUE(reader.was_null());
}

// was_null() after a vector tells of the vector, not of its last element
// (kazoo's CREATOR_ALL_ACL is auth with a null id).
TEST(JuteTest, WasNullAfterAVectorIsTheVectors) {
  const std::string acl_bytes = Unhex(
      "00000001"
      "0000001f"
      "00000004"
      "61757468"
      "ffffffff");
  JuteReader reader(acl_bytes);
  std::vector<Acl> acl;
  reader.Records("acl", acl);
  ASSERT_FALSE(reader.failed()) << reader.error();
  EXPECT_FALSE(reader.was_null());
  ASSERT_EQ(acl.size(), 1u);
  EXPECT_EQ(acl[0].id, (Id{"auth", ""}));
  const std::string string_bytes = Unhex(
      "00000002"
      "00000002"
      "2f61"
      "ffffffff");
  JuteReader strings(string_bytes);
  std::vector<std::string> list;
  strings.Strings("watches", list);
  EXPECT_FALSE(strings.was_null());
  EXPECT_EQ(list, (std::vector<std::string>{"/a", ""}));
}

// An ACL takes at least 12 bytes on the wire: a count that cannot fit is
// refused before any room is taken for it.
TEST(JuteTest, AVectorCountIsBoundedByItsElementsSmallestSize) {
  std::string error;
  EXPECT_FALSE(
      DecodeRecord<GetAclResponse>(Unhex("00000002") + std::string(20, '\0'), &error).has_value());
  EXPECT_EQ(error, "jute: acl at byte 0: count 2 cannot fit in the 20 bytes left");
}

TEST(JuteTest, RefusesLengthsThatDoNotFit) {
  std::string error;
  // A path whose length runs past the frame.
  EXPECT_FALSE(DecodeRecord<PathRecord>(Unhex("00000005"
                                              "2f61"),
                                        &error)
                   .has_value());
  EXPECT_EQ(error, "jute: path at byte 0: length 5 runs past the 2 bytes left");
  // Negative, not -1.
  EXPECT_FALSE(DecodeRecord<PathRecord>(Unhex("fffffffe"), &error).has_value());
  EXPECT_EQ(error, "jute: path at byte 0: length -2 is negative");
  // A vector count of 2^31-1 with 4 bytes left: refused before reserving.
  EXPECT_FALSE(DecodeRecord<ChildrenResponse>(Unhex("7fffffff"
                                                    "00000000"),
                                              &error)
                   .has_value());
  EXPECT_EQ(error, "jute: children at byte 0: count 2147483647 is above the limit of 1048576");
  EXPECT_FALSE(DecodeRecord<ChildrenResponse>(Unhex("00000003"
                                                    "00000000"),
                                              &error)
                   .has_value());
  EXPECT_EQ(error, "jute: children at byte 0: count 3 cannot fit in the 4 bytes left");
  // A short int.
  EXPECT_FALSE(DecodeRecord<ErrorResponse>(Unhex("0000"), &error).has_value());
  EXPECT_EQ(error, "jute: err at byte 0: needs 4 bytes, 2 left");
}

// As ZooKeeper's Java server reads it (DataInputStream.readBoolean).
TEST(JuteTest, AnyNonZeroByteIsTrue) {
  std::optional<PathWatchRequest> request =
      DecodeRecord<PathWatchRequest>(Unhex("00000002"
                                           "2f61"
                                           "02"));
  ASSERT_TRUE(request.has_value());
  EXPECT_TRUE(request->watch);
  EXPECT_EQ(Hex(EncodeRecord(*request)),
            "00000002"
            "2f61"
            "01");
}

TEST(JuteTest, RefusesBytesAfterAWholeRecord) {
  std::string error;
  EXPECT_FALSE(DecodeRecord<ErrorResponse>(Unhex("00000000"
                                                 "ff"),
                                           &error)
                   .has_value());
  EXPECT_EQ(error, "jute: record at byte 4: 1 bytes after its end");
}

TEST(JuteTest, AnAclListRoundTrips) {
  GetAclResponse response;
  response.acl = {{31, {"world", "anyone"}}, {1, {"digest", "bob:hash"}}};
  response.stat.czxid = 9;
  const std::string bytes = EncodeRecord(response);
  EXPECT_EQ(DecodeRecord<GetAclResponse>(bytes), response);
  // The first ACL's bytes: perms, then Id {scheme, id}.
  EXPECT_EQ(Hex(bytes.substr(0, 4 + 4 + 4 + 5 + 4 + 6)),
            "00000002"
            "0000001f"
            "00000005"
            "776f726c64"
            "00000006"
            "616e796f6e65");
}

TEST(JuteTest, AReaderStopsAtItsFirstFailure) {
  const std::string short_bytes = Unhex("0000");
  JuteReader reader(short_bytes);
  std::int32_t a = 7;
  std::int64_t b = 7;
  reader.Int("a", a);
  reader.Long("b", b);
  EXPECT_TRUE(reader.failed());
  EXPECT_EQ(reader.error(), "jute: a at byte 0: needs 4 bytes, 2 left");
  EXPECT_EQ(a, 7);
  EXPECT_EQ(b, 7);
}

}  // namespace
}  // namespace tenure::zk
