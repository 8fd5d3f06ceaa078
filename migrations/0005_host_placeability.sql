ALTER TABLE `hosts` ADD `problem` text;--> statement-breakpoint
ALTER TABLE `hosts` ADD `drained` integer DEFAULT false NOT NULL;