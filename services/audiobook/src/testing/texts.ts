/** Prose for the tests: a few thousand characters of English, and short English and Spanish passages. */

export const ENGLISH_BOOK = `The Keeper of the Northern Light

Every morning, before the fishing boats left the harbour, Marta Ellison climbed the one hundred and twelve steps of the lighthouse. She counted them aloud, as her father had done, and as his mother had done before him. The counting was not necessary. Her feet knew every step, every crack in the stone, and every place where the iron rail had rusted thin. But the numbers kept her company, and on grey winter days company was hard to find.

From the lamp room she could see the whole of the bay. To the south, the village curled around the water like a sleeping cat, its chimneys already smoking. To the north, the cliffs rose black and wet, and beyond them the open sea stretched away until it became the sky. She cleaned the great lens with a soft cloth, checked the oil, and wrote the weather in the log book in small, careful letters.

The log book was older than the lighthouse itself. Its first pages had been written by a sea captain who had lost two ships on the northern rocks, and who had spent the rest of his life asking the town council for a light. The council had refused him eleven times. On the twelfth attempt, after a storm that sank four boats in a single night, they finally agreed. The captain did not live to see the lamp lit, but his handwriting still filled the first pages, slanted and impatient, as if he were still arguing.

In the spring, a young engineer arrived from the city with a leather case full of drawings. He explained, politely but firmly, that the lighthouse would soon be automatic. A machine would turn the lamp on at dusk and off at dawn. A radio would report the weather. Nobody would need to climb the stairs at all. Marta listened without interrupting. When he had finished, she made him a cup of tea and asked him whether his machine could count.

The engineer laughed, thinking it was a joke. Then he saw that she was serious. Machines count very well, he said. They count faster than any person ever could. Marta nodded and looked out at the water. That is good, she said, because someone must count the boats that go out, and someone must count the boats that come home, and the two numbers must always be the same.

He stayed for three weeks. He measured the tower, tested the wiring, and slept badly in the small room below the lamp, because the wind never stopped talking. On his last evening the fog came in thick and fast, and the radio went silent. Marta climbed the stairs with a lantern, lit the old lamp by hand, and stood beside it until morning. Nine boats went out that day. Nine boats came home.

The machine was installed in the autumn, and it worked exactly as the engineer had promised. Marta still climbs the steps every morning. She still counts them aloud. And in the log book, beneath the captain's impatient handwriting and her own careful letters, there is now a third hand: short, square, and precise, noting the date of each visit, and the number of boats.`;

export const SHORT_ENGLISH = `The old bridge crossed the river at its narrowest point. Every evening the children of the village gathered there to watch the boats pass under it.

One summer the river rose higher than anyone could remember. The water touched the stones of the bridge, and the boats could no longer pass. The children waited for many days, and then the water went down again.`;

export const SHORT_SPANISH = `El pueblo estaba junto al mar. Cada mañana los pescadores salían en sus barcas antes de que saliera el sol.

Una mujer vivía en la casa blanca al final de la playa. Ella miraba el mar todos los días y escribía en un cuaderno el nombre de cada barca que volvía al puerto.`;
