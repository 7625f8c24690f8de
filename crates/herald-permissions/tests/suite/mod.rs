mod table;
