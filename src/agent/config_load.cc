#include "agent/config_load.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace tenure::agent {
namespace {

Status Refuse(const std::string& path, const std::string& why) {
  return Status::InvalidArgument(path + ": " + why);
}

Result<std::string> ReadConfigFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Refuse(path, std::strerror(errno));
  std::string text;
  char buffer[65536];
  Status failed;
  while (true) {
    const ssize_t got = ::read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      failed = Refuse(path, std::strerror(errno));
      break;
    }
    if (got == 0) break;
    if (text.size() + static_cast<std::size_t>(got) > kMaxConfigFileBytes) {
      failed = Refuse(path, "larger than 1 MiB: not a config file");
      break;
    }
    text.append(buffer, static_cast<std::size_t>(got));
  }
  ::close(fd);
  if (!failed.ok()) return failed;
  return text;
}

Status LoadFile(const std::string& path, FileConfig* into) {
  TENURE_ASSIGN_OR_RETURN(std::string text, ReadConfigFile(path));
  return ApplyConfigText(path, text, into);
}

Status LoadDir(const std::string& dir, FileConfig* into) {
  DIR* listing = ::opendir(dir.c_str());
  if (listing == nullptr) return Refuse(dir, std::strerror(errno));
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* entry = ::readdir(listing)) {
    const std::string name = entry->d_name;
    auto ends = [&](std::string_view suffix) {
      return name.size() > suffix.size() &&
             name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (ends(".json") || ends(".hcl")) names.push_back(name);
  }
  const int read_errno = errno;
  ::closedir(listing);
  if (read_errno != 0) return Refuse(dir, std::strerror(read_errno));
  std::sort(names.begin(), names.end());  // byte order, as the docs promise
  for (const std::string& name : names) {
    const std::string path = dir + (dir.back() == '/' ? "" : "/") + name;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return Refuse(path, std::strerror(errno));
    if (!S_ISREG(st.st_mode)) continue;  // a directory named x.json is not a file of settings
    TENURE_RETURN_IF_ERROR(LoadFile(path, into));
  }
  return Status::Ok();
}

}  // namespace

Status LoadConfigPaths(const std::vector<ConfigPath>& paths, FileConfig* into) {
  for (const ConfigPath& given : paths) {
    const std::string& path = given.path;
    if (path.empty()) return Status::InvalidArgument("an empty config path");
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return Refuse(path, std::strerror(errno));
    const bool is_dir = S_ISDIR(st.st_mode);
    if (given.kind == ConfigPath::Kind::kFile && is_dir) {
      return Refuse(path, "is a directory (give it with -config-dir)");
    }
    if (given.kind == ConfigPath::Kind::kDir && !is_dir) {
      return Refuse(path, "not a directory (give a file with -config-file)");
    }
    if (!is_dir && !S_ISREG(st.st_mode)) return Refuse(path, "not a regular file");
    TENURE_RETURN_IF_ERROR(is_dir ? LoadDir(path, into) : LoadFile(path, into));
  }
  return Status::Ok();
}

}  // namespace tenure::agent
