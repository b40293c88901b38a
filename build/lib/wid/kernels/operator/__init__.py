"""The WID operator's shards: one shard's micro-batch in, its windows, late
and rejected rows and counts out, per window kind (`engines`)."""
