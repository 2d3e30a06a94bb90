"""The merge hook's command reader: bash read the way bash would run it (pure).

read.read_command parses the command (bash_tree), and reader.Reader walks the tree: each simple
command's program is read by its row of program_table.PROGRAMS, a function (reading, argv, env,
layer, stdin, open_args) in reader_programs, reader_shells, reader_glab or reader_git, which
reports what it finds through the steps of reading.Reading.

A new form to read is a row plus a function: a program that runs another is a row of PROGRAMS
(a plain wrapper: a row of wrappers.WRAPPERS with its options, read by read_wrapped); a glab
subcommand or flag, a branch of reader_glab with its flags in glab.py; a git setting that
changes what a later git command runs, a row of reader_git.GIT_SETTINGS. Its cases go into the
tables of tests/test_command_reader.py, which the deployed hook runs too
(tests/test_merge_hook.py); a row no case reaches fails the test that walks PROGRAMS.
"""
