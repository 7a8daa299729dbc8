"""The command line, ``python -m core``: ``main`` assembles the commands, one module per area:
``codec`` (check, encode, decode, roundtrip, ladder, build-checkpoint), ``judging`` (evaluate,
abx-export), ``dataset`` (tokenize), ``doctor``; ``common`` holds what they share."""
