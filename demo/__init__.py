"""The bundled demo (`make demo`): its corpus (the King James Bible), its
sentence-pair task, and its report of what the model learned."""
