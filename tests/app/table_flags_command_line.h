// One command line through an option table, as a command of `surge` reads
// it: the flags of `message`'s table registered on a subcommand, the line
// parsed, then TableFlags::Resolve (defaults, the flags, each field's
// checks). CLI11's own errors (a required flag missing, an unknown flag)
// are thrown as CLI::ParseError.
#ifndef SURGE_TESTS_APP_TABLE_FLAGS_COMMAND_LINE_H_
#define SURGE_TESTS_APP_TABLE_FLAGS_COMMAND_LINE_H_

#include <CLI/CLI.hpp>
#include <string>

#include "absl/status/status.h"
#include "app/run_options.h"
#include "google/protobuf/message.h"

namespace surge::app {

// Resolves `command_line` into `message`; `help`, when given, gets the
// command's --help text.
inline absl::Status ResolveTableFlags(const std::string& command_line,
                                      google::protobuf::Message* message,
                                      std::string* help = nullptr) {
  CLI::App app;
  TableFlags flags(message->GetDescriptor());
  CLI::App* command = app.add_subcommand("command");
  flags.Register(*command);
  if (help != nullptr) *help = command->help();
  app.parse("command " + command_line);
  return flags.Resolve(message);
}

}  // namespace surge::app

#endif  // SURGE_TESTS_APP_TABLE_FLAGS_COMMAND_LINE_H_
