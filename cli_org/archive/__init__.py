"""The archive: agent sessions per harness, memory-file versions, and adoption figures."""
