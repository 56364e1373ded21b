"""The corpus stage: sources (OPUS, local Moses files, embedded demo), cleaning, sampling."""
