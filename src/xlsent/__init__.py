"""xlsent: cross-lingual sentence encoders for low-resource languages, corpus to tables."""
