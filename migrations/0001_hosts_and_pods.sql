CREATE TABLE `hosts` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`region` text NOT NULL,
	`ssh_host` text NOT NULL,
	`ssh_port_min` integer NOT NULL,
	`ssh_port_max` integer NOT NULL,
	`cpu` real NOT NULL,
	`memory_mb` integer NOT NULL,
	`disk_gb` integer NOT NULL,
	`allocated_cpu` real DEFAULT 0 NOT NULL,
	`allocated_memory_mb` integer DEFAULT 0 NOT NULL,
	`allocated_disk_gb` integer DEFAULT 0 NOT NULL,
	`status` text DEFAULT 'offline' NOT NULL,
	`agent_token_hash` text NOT NULL,
	`agent_version` text,
	`last_seen_at` text,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `hosts_name_unique` ON `hosts` (`name`);--> statement-breakpoint
CREATE UNIQUE INDEX `hosts_agent_token_hash_unique` ON `hosts` (`agent_token_hash`);--> statement-breakpoint
CREATE TABLE `pod_events` (
	`id` text PRIMARY KEY NOT NULL,
	`pod_id` text NOT NULL,
	`type` text NOT NULL,
	`message` text NOT NULL,
	`metadata` text,
	`created_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `pod_events_pod_created_idx` ON `pod_events` (`pod_id`,`created_at`);--> statement-breakpoint
CREATE INDEX `pods_host_idx` ON `pods` (`host_id`);--> statement-breakpoint
CREATE UNIQUE INDEX `pods_host_ssh_port_idx` ON `pods` (`host_id`,`ssh_port`);