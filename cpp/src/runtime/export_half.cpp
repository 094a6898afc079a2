// etproof/export_half.cpp — the runtime half's bridge to the export half (etproof/export_half.h).
#include "etproof/runtime/export_half.h"
#include "etproof/runtime/isolation.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <vector>

#include "etproof/core/error.h"
#include "core/common.h"
#include "core/json_parse.h"

namespace etproof {

std::string export_python() {
  const char* env = std::getenv("ETPROOF_PYTHON");
  return (env && *env) ? env : ETPROOF_PYTHON;
}

std::string etproof_command() {
  if (const char* prog = std::getenv("ETPROOF_PROG"); prog && *prog) return prog;
  std::error_code ec;
  std::filesystem::path self = executable_path(ec);
  const std::string name = ec ? std::string() : self.filename().string();
  if (name != "etproof" && name != "etproof-nodelegate") return "etproof";
  const std::filesystem::path rel = self.lexically_relative(std::filesystem::current_path(ec));
  if (!ec && !rel.empty() && *rel.begin() != "..")
    self = rel.has_parent_path() ? rel : std::filesystem::path(".") / rel;
  return self.string();
}

std::string export_half_command(const std::string& command) {
  return export_python() + " -m etproof " + command;
}

// The export half's probe (`python -m etproof probe --json`, cached by the Python side): its
// "export" list, or nullopt with the reason it could not be had.
std::optional<nlohmann::json> query_export_half(std::string& why_not) {
  const std::string python = export_python();
  if (python.find('/') != std::string::npos && access(python.c_str(), X_OK) != 0) {
    why_not = "the export half's Python interpreter " + python +
              " is missing or not executable (run ./setup.sh, or set ETPROOF_PYTHON)";
    return std::nullopt;
  }
  const std::string cmd = detail::shell_quote(python) + " -m etproof probe --json";
  std::cout.flush();
  FILE* f = popen(cmd.c_str(), "r");
  if (!f) {
    why_not = "cannot run " + cmd + ": " + std::strerror(errno);
    return std::nullopt;
  }
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) out.append(buf, n);
  const int status = pclose(f);
  const int rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  nlohmann::json doc;
  try {
    // Its kind is never shown: the caller says why_not.
    doc = detail::parse_json(out, {ErrorKind::kCapabilityUnavailable, cmd, ""});
  } catch (const Error&) {
    const std::string first = out.substr(0, out.find('\n'));
    why_not = cmd + " failed (exit status " + std::to_string(rc) + ")" +
              (first.empty() ? "; see its stderr above" : ": " + first.substr(0, 300));
    return std::nullopt;
  }
  if (auto it = doc.find("export"); doc.is_object() && it != doc.end() && it->is_array())
    return std::move(*it);
  why_not = cmd + " printed JSON without an \"export\" list (exit status " + std::to_string(rc) + ")";
  return std::nullopt;
}

int run_export_half(int argc, char** argv) {
  return run_export_half_command("export", std::vector<std::string>(argv, argv + argc));
}

int run_export_half_command(const std::string& command, const std::vector<std::string>& arguments,
                            bool stdout_to_stderr) {
  const std::string python = export_python();
  if (python.find('/') != std::string::npos && access(python.c_str(), X_OK) != 0)
    throw Error(ErrorKind::kCapabilityUnavailable,
                "the export half's Python interpreter " + python + " is missing or not executable",
                "run ./setup.sh (creates .venv with executorch), or set ETPROOF_PYTHON to a Python "
                "with the etproof package installed");
  std::vector<std::string> args{python, "-m", "etproof", command};
  args.insert(args.end(), arguments.begin(), arguments.end());
  std::vector<char*> cargs;
  for (auto& a : args) cargs.push_back(a.data());
  cargs.push_back(nullptr);
  std::cout.flush();
  std::cerr.flush();
  const pid_t pid = fork();
  if (pid < 0)
    throw Error(ErrorKind::kIo, std::string("fork failed: ") + std::strerror(errno),
                "retry; the system is out of processes or memory");
  if (pid == 0) {
    if (stdout_to_stderr) ::dup2(STDERR_FILENO, STDOUT_FILENO);
    // Usage lines and remedies name the command the user typed (etproof.errors.command_name).
    ::setenv("ETPROOF_PROG", etproof_command().c_str(), 1);
    execvp(cargs[0], cargs.data());
    std::fprintf(stderr, "error [capability-unavailable]: cannot run %s: %s\n"
                         "remedy: run ./setup.sh, or set ETPROOF_PYTHON\n",
                 cargs[0], std::strerror(errno));
    _exit(2);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      throw Error(ErrorKind::kIo, std::string("waitpid failed: ") + std::strerror(errno), "retry");
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) {
    std::cerr << "error [io]: the export half was killed by signal " << WTERMSIG(status) << "\n";
    return 2;
  }
  return 2;
}

}  // namespace etproof
