//! No password reaches stdout or stderr, whatever the command, wherever the password was given.
