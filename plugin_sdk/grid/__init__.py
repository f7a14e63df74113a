"""The entity grid: cells, speech acts, entities and relations, strength and decay, consolidation."""
