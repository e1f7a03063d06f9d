#include "raft/entry_codec.h"

#include <cstdint>
#include <limits>

#include "common/assert.h"
#include "common/coding.h"

namespace tenure::raft {
namespace {

void PutFixed32At(std::uint32_t v, char* at) {
  for (int i = 0; i < 4; ++i) at[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

// Pads *out with zeros from `start` so the frame is a multiple of 8 bytes and
// fills in its length field.
void FinishFrame(std::size_t start, std::string* out) {
  std::size_t payload = out->size() - start - kEntryHeaderBytes;
  TENURE_ASSERT(payload <= std::numeric_limits<std::uint32_t>::max());
  out->resize(start + FramedEntrySize(payload), '\0');
  PutFixed32At(static_cast<std::uint32_t>(payload), out->data() + start);
}

}  // namespace

void FrameEntry(std::string_view payload, std::string* out) {
  std::size_t start = out->size();
  out->append(kEntryHeaderBytes, '\0');
  out->append(payload.data(), payload.size());
  FinishFrame(start, out);
}

Result<std::string_view> UnframeEntry(std::string_view entry) {
  if (entry.size() < kEntryAlignBytes || entry.size() % kEntryAlignBytes != 0) {
    return Status::Corruption("raft entry: size " + std::to_string(entry.size()) +
                              " is not a positive multiple of 8");
  }
  ByteReader reader(entry);
  std::size_t length = reader.GetFixed32();
  if (FramedEntrySize(length) != entry.size()) {
    return Status::Corruption("raft entry: length field " + std::to_string(length) +
                              " does not fit frame of " + std::to_string(entry.size()) + " bytes");
  }
  std::string_view payload = entry.substr(kEntryHeaderBytes, length);
  for (char c : entry.substr(kEntryHeaderBytes + length)) {
    if (c != '\0') return Status::Corruption("raft entry: non-zero padding");
  }
  return payload;
}

void EncodeEntry(const state::Command& command, std::string* out) {
  out->clear();
  out->append(kEntryHeaderBytes, '\0');
  state::EncodeCommand(command, out);  // appends after the reserved header
  FinishFrame(0, out);
}

Result<state::Command> DecodeEntry(std::string_view entry) {
  Result<std::string_view> payload = UnframeEntry(entry);
  if (!payload.ok()) return payload.status();
  Result<state::Command> command = state::DecodeCommand(*payload);
  if (!command.ok()) {
    return Status::Corruption("raft entry: " + std::string(command.status().message()));
  }
  return command;
}

}  // namespace tenure::raft
