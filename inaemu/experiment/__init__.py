"""`inaemu run`'s experiment machinery: set-up per network kind, records, summaries, files."""
