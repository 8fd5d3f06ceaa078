CREATE TABLE `pod_ssh_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`pod_id` text NOT NULL,
	`fingerprint` text NOT NULL,
	`public_key` text NOT NULL,
	`added_by` text NOT NULL,
	`via` text NOT NULL,
	`created_at` text NOT NULL,
	`removal_requested_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `pod_ssh_keys_pod_fingerprint_adder_idx` ON `pod_ssh_keys` (`pod_id`,`fingerprint`,`added_by`);--> statement-breakpoint
CREATE INDEX `pod_ssh_keys_adder_idx` ON `pod_ssh_keys` (`added_by`);--> statement-breakpoint
CREATE INDEX `pod_ssh_keys_removal_idx` ON `pod_ssh_keys` (`removal_requested_at`);