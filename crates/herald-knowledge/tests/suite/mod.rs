mod memory_processes;
