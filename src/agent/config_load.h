// Reading `tenure server`'s config files and directories: the I/O edge of
// config_file.h. Files are applied in the order given; a directory's *.json
// and *.hcl files in the byte order of their names (other entries are
// skipped).
#pragma once

#include <string>
#include <vector>

#include "agent/config_file.h"
#include "common/status.h"

namespace tenure::agent {

struct ConfigPath {
  enum class Kind {
    kFile,    // -config-file: a directory is refused
    kDir,     // -config-dir: a file is refused
    kEither,  // `tenure validate PATH`: whichever it is
  };
  Kind kind = Kind::kFile;
  std::string path;
};

// A config file larger than this is not one (and would be read whole).
constexpr std::size_t kMaxConfigFileBytes = 1 << 20;

// Applies every path's files over *into, in order. An error names the file
// (and line); *into may then hold the files before it: discard it.
Status LoadConfigPaths(const std::vector<ConfigPath>& paths, FileConfig* into);

}  // namespace tenure::agent
